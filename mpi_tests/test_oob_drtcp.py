"""oob drtcp: the launcher's own messages (mpirun <-> orted daemons) over our
component, selected with --mca oob drtcp.

On one machine a daemon only exists for a "remote" host: `-host 127.0.0.2`
counts as remote for ORTE, and a fake rsh agent (the `fake_hosts` fixture in
conftest.py) starts its orted locally, which then connects back to mpirun
over our component. With several such
hosts and `routed_radix 1` the daemons form a chain, so messages between
mpirun and the last daemon are relayed by the ones in between. (The MPI
processes of such fake hosts share one machine; vader between "hosts" breaks
stock runs too, so these jobs use self,tcp.)
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import harness
import oob_wire

OOB = {"oob": "drtcp", "oob_drtcp_verbose": 20}


@pytest.fixture(autouse=True)
def _needs_oob_drtcp(components):
    if not any(c.id == "oob/drtcp" for c in components):
        pytest.skip("oob drtcp not built")


def stats(text: str) -> list[dict[str, int]]:
    """The per-process counters every drtcp process prints at shutdown."""
    keys = ("sent", "received", "relayed", "refused", "identity", "key", "late", "errors",
            "races")
    rx = (r"sent (\d+), received (\d+), relayed (\d+) messages; refused (\d+) connections "
          r"\(identity (\d+), key (\d+), late (\d+)\), (\d+) protocol errors, (\d+) races")
    return [dict(zip(keys, map(int, m))) for m in re.findall(rx, text)]


def expect(result, marker: str) -> None:
    result.check()
    assert marker in result.stdout, f"missing {marker!r}:\n{result}"


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
def test_single_host_job_selects_it(mpi, pml):
    result = mpi.run("ring", np=4, mca={**OOB, "pml": pml, "oob_base_verbose": 10})
    expect(result, "ring ok")
    out = result.stdout + result.stderr
    assert "mca:oob:select: Found 1 active transports" in out, result
    assert "checking available component tcp" not in out, result
    assert len(stats(out)) == 1, result  # mpirun only: MPI processes use no OOB


@pytest.mark.mpi_timeout(120)
def test_stock_run_does_not_use_it(mpi):
    """Installed but not named, the component stays out of the way."""
    result = mpi.run("ring", np=2, mca={"oob_base_verbose": 10})
    expect(result, "ring ok")
    out = result.stdout + result.stderr
    assert "Skipping component [drtcp]" in out, result
    assert not stats(out), result


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
def test_daemons_in_a_chain_relay_messages(mpi, fake_hosts, pml):
    result = mpi.run("ring", np=6, mca={**OOB, "pml": pml, "btl": "self,tcp"},
                     mpirun_args=fake_hosts(3, chain=True))
    expect(result, "ring ok")
    counters = stats(result.stdout + result.stderr)
    assert len(counters) == 4, result  # mpirun and three daemons
    assert sum(c["relayed"] for c in counters) > 0, result
    assert all(c["errors"] == 0 and c["refused"] == 0 for c in counters), result


@pytest.mark.mpi_timeout(180)
def test_demo_through_fake_remote_daemons(mpi, fake_hosts):
    result = mpi.run("demo", np=4, mca={**OOB, "pml": "dr", "btl": "self,tcp"},
                     mpirun_args=fake_hosts(2))
    expect(result, "demo ok")


def _attack(port_lo: int, port_hi: int, stop: threading.Event, sent: list[int]) -> None:
    """Garbage, a half CONNECT and a silent caller at every port in the range."""
    junk = [b"GET / HTTP/1.1\r\n\r\n", os.urandom(200),
            bytes.fromhex("44524f42") + bytes(30),  # our magic, then nonsense
            b"\xd9" * 72]
    while not stop.is_set():
        for port in range(port_lo, port_hi + 1):
            for payload in junk:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                        s.sendall(payload)
                        sent[0] += 1
                except OSError:
                    pass
        time.sleep(0.05)


@pytest.mark.mpi_timeout(180)
def test_garbage_on_the_port_leaves_the_job_unharmed(mpi, fake_hosts):
    base = harness.free_port_block(10)
    stop = threading.Event()
    sent = [0]
    t = threading.Thread(target=_attack, args=(base, base + 9, stop, sent), daemon=True)
    t.start()
    try:
        result = mpi.run("demo", np=4, mca={**OOB, "oob_drtcp_static_ports": f"{base}-{base + 9}",
                                            "pml": "ob1", "btl": "self,tcp"},
                         mpirun_args=fake_hosts(2))
    finally:
        stop.set()
        t.join()
    expect(result, "demo ok")
    counters = stats(result.stdout + result.stderr)
    assert sent[0] > 0
    assert sum(c["refused"] + c["errors"] for c in counters) > 0, result


def _silent_callers(port: int, n: int, outcome: dict) -> None:
    """Open n connections to mpirun's port that never say anything; report
    whether the oldest is closed by the other side."""
    deadline = time.monotonic() + 30
    conns: list[socket.socket] = []
    try:
        while len(conns) < n and time.monotonic() < deadline:
            try:
                conns.append(socket.create_connection(("127.0.0.1", port), timeout=1))
            except OSError:
                time.sleep(0.02)  # mpirun is not listening yet
        outcome["opened"] = len(conns)
        if conns:
            conns[0].settimeout(10)
            try:
                outcome["oldest_closed"] = conns[0].recv(1) == b""
            except OSError as exc:  # reset counts as closed, a timeout does not
                outcome["oldest_closed"] = not isinstance(exc, socket.timeout)
    finally:
        for c in conns:
            c.close()


@pytest.mark.mpi_timeout(120)
def test_silent_callers_are_bounded(mpi):
    """70 connections that never send a CONNECT: past 64 the listener closes
    the oldest, and the job is not disturbed."""
    port = harness.free_port_block(1)
    outcome: dict = {}
    t = threading.Thread(target=_silent_callers, args=(port, 70, outcome), daemon=True)
    t.start()
    result = mpi.run("demo", np=2, args=[1 << 21, 10],
                     mca={**OOB, "oob_drtcp_static_ports": str(port), "pml": "ob1",
                          "btl": "self,tcp"})
    t.join()
    expect(result, "demo ok")
    assert outcome.get("opened") == 70, outcome
    assert outcome.get("oldest_closed"), outcome
    assert "too many connections without a handshake" in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(120)
def test_killed_daemon_ends_the_job_with_an_error(mpi, fake_hosts, tmp_path):
    killed: list[int] = []

    def kill_daemon() -> None:
        deadline = time.time() + 20
        while time.time() < deadline and not killed:
            time.sleep(0.5)
            out = subprocess.run(["pgrep", "-f", "orted.*oob.*drtcp"], capture_output=True,
                                 text=True).stdout.split()
            for pid in map(int, out):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    t = threading.Thread(target=kill_daemon, daemon=True)
    t.start()
    start = time.time()
    result = mpi.run("hang", np=2, mca={**OOB, "pml": "ob1", "btl": "self,tcp"},
                     mpirun_args=fake_hosts(1), timeout=90)
    t.join()
    took = time.time() - start
    subprocess.run(["pkill", "-9", "-f", str(mpi.programs.outdir / "hang")], check=False)
    assert killed, "no orted found to kill"
    assert not result.timed_out and result.rc != 0, result
    assert took < 60, f"mpirun took {took:.0f} s to notice"


@pytest.mark.mpi_timeout(60)
def test_parameters_listed_with_help(mpi):
    result = mpi.run_tool(["ompi_info", "--param", "oob", "drtcp", "--level", "9"])
    result.check()
    for name in ("if_include", "if_exclude", "static_ports", "max_msg_size", "connect_timeout",
                 "connect_attempts", "retry_delay", "keepalive_time", "keepalive_intvl",
                 "keepalive_probes", "auth", "verbose"):
        assert f"oob_drtcp_{name}" in result.stdout, name


# ------------------------------------------------------------- hostile peers
#
# A stranger on this machine attacks mpirun's oob drtcp port while a
# two-rank job runs (pmix_victim under pml dr over self,vader, issue 24's
# set-up). Every connection of the stranger gets no reply and is closed
# within a bound; the job goes on and finishes right with exit code 0.

VICTIM_MCA = {**OOB, "pml": "dr", "btl": "self,vader"}


def victim_ok(result, np: int = 2) -> None:
    """The attacked job finished, right, and nothing crashed."""
    out = result.stdout + result.stderr
    assert result.rc == 0 and f"victim ok {np} " in result.stdout, result
    assert not re.search(r"exited on signal|core dumped|Segmentation fault", out), result


@pytest.mark.mpi_timeout(120)
def test_forged_connect_of_a_daemon_that_does_not_exist(mpi, tmp_path):
    """Issue 24's crash: a well-formed CONNECT (wire version 1, right CRC)
    naming the job family and daemon vpid 1, which a one-host job does not
    have. mpirun answered with its own CONNECT and died of SIGSEGV in the
    errmgr when the stranger closed. Now: no reply, and the job ends with 0."""
    with oob_wire.OobVictim(mpi, tmp_path, VICTIM_MCA, timeout=90) as job:
        job.still_running()
        s = oob_wire.connect(job.addr)
        oob_wire.send_some(s, oob_wire.connect_v1(job.jobid, 1))
        took, got = oob_wire.listen_for(s, 3.0)
        s.close()
        time.sleep(1.0)  # the stranger's close reached mpirun
        result = job.finish()
    assert got == b"", f"mpirun answered the forged CONNECT: {got.hex()}\n{result}"
    victim_ok(result)
    assert took is not None, "the forged connection was not closed within 3 s"


HOSTILE_MCA = {**VICTIM_MCA, "oob_drtcp_connect_timeout": oob_wire.DEADLINE * 1000}


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("attack", oob_wire.ATTACKS)
def test_hostile_clients_while_a_job_runs(mpi, tmp_path, attack):
    """While a two-rank job runs, a stranger of the same user attacks
    mpirun's oob drtcp port (see oob_wire: noise, huge lengths, forged
    HELLOs for processes outside the job, half-open, one byte a second, 200
    at once). Each connection is closed without a reply within a bound; the
    job runs on and finishes right with 0; mpirun counts exactly those
    connections."""
    with oob_wire.OobVictim(mpi, tmp_path, HOSTILE_MCA) as job:
        job.still_running()
        expected = oob_wire.ATTACKS[attack](job)
        expected.pop("connections")
        job.still_running()
        result = job.finish()
    victim_ok(result)
    [c] = stats(result.stdout + result.stderr)  # mpirun only
    moved = {k: c[k] for k in ("refused", "identity", "key", "late", "errors")}
    zero = {"refused": 0, "identity": 0, "key": 0, "late": 0, "errors": 0}
    assert moved == {**zero, **expected}, result


@pytest.mark.mpi_timeout(180)
def test_forged_hellos_for_real_daemons_without_the_key(mpi, tmp_path, fake_hosts):
    """With a real daemon (vpid 1, on a fake remote host) connected:
    a HELLO in its name gets no reply (already connected); one claiming a
    reconnect passes identity and fails the MAC (no reply either); one in
    mpirun's own name is refused. The job finishes right with 0."""
    mca = {**OOB, "pml": "dr", "btl": "self,tcp",
           "oob_drtcp_connect_timeout": oob_wire.DEADLINE * 1000}
    with oob_wire.OobVictim(mpi, tmp_path, mca, mpirun_args=tuple(fake_hosts(1))) as job:
        job.still_running()
        me = (job.jobid, job.vpid)
        for what, frame in (
                ("daemon 1, connected", oob_wire.handshake(oob_wire.HELLO, (job.jobid, 1), me)),
                ("daemon 1, reconnect", oob_wire.handshake(
                    oob_wire.HELLO, (job.jobid, 1), me, nonce=bytes(16), mac=bytes(range(32)),
                    flags=oob_wire.FLAG_RECONNECT)),
                ("mpirun", oob_wire.handshake(oob_wire.HELLO, me, me))):
            s = oob_wire.connect(job.addr)
            oob_wire.send_some(s, frame)
            oob_wire.closed_unanswered(s, oob_wire.PROMPT, what)
        job.still_running()
        result = job.finish()
    victim_ok(result)
    counters = stats(result.stdout + result.stderr)
    assert len(counters) == 2, result  # mpirun and the daemon
    hnp = counters[0] if counters[0]["refused"] else counters[1]
    assert (hnp["refused"], hnp["identity"], hnp["key"]) == (3, 2, 1), result
    assert sum(c["refused"] + c["errors"] for c in counters) == 3, result


@pytest.mark.mpi_timeout(120)
def test_the_key_reaches_daemons_and_ranks_by_environment_only(mpi, tmp_path, fake_hosts):
    """mpirun's key is in the environment of its daemons and of the ranks
    (hex, 64 characters, the same everywhere), never on a command line."""
    script = tmp_path / "show_key.sh"
    script.write_text("#!/bin/sh\necho \"key=${DR_JOB_KEY:-none}\"\n"
                      "for p in $(pgrep -f orted); do tr '\\0' ' ' < /proc/$p/cmdline; echo; done\n")
    script.chmod(0o755)
    result = mpi.run([str(script)], np=2, mca={**OOB, "btl": "self,tcp"},
                     mpirun_args=fake_hosts(1))
    result.check()
    keys = set(re.findall(r"^key=(\S+)$", result.stdout, re.M))
    assert len(keys) == 1 and re.fullmatch(r"[0-9a-f]{64}", next(iter(keys))), result
    assert next(iter(keys)) not in result.stdout.replace(f"key={next(iter(keys))}", ""), result
    assert os.environ.get("DR_JOB_KEY") not in keys


@pytest.mark.mpi_timeout(120)
def test_auth_off_still_checks_identity(mpi, tmp_path, fake_hosts):
    """oob_drtcp_auth=0 (debugging): daemons connect without MACs; the
    forged CONNECT of issue 24 and an unknown daemon's HELLO are still
    refused unanswered."""
    mca = {**OOB, "pml": "ob1", "btl": "self,tcp", "oob_drtcp_auth": 0}
    with oob_wire.OobVictim(mpi, tmp_path, mca, mpirun_args=tuple(fake_hosts(1))) as job:
        job.still_running()
        for frame in (oob_wire.connect_v1(job.jobid, 2),
                      oob_wire.handshake(oob_wire.HELLO, (job.jobid, 2), (job.jobid, 0))):
            s = oob_wire.connect(job.addr)
            oob_wire.send_some(s, frame)
            oob_wire.closed_unanswered(s, oob_wire.PROMPT, frame[:6].hex())
        result = job.finish()
    victim_ok(result)
    counters = stats(result.stdout + result.stderr)
    assert sum(c["identity"] for c in counters) == 1, result
    assert sum(c["errors"] for c in counters) == 1, result
