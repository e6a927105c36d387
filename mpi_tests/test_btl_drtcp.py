"""btl drtcp in real MPI jobs, under ob1 and under dr.

The harness's MPI programs run with `--mca btl self,drtcp` (loopback allowed
so the job is single-host), byte-exact. Then what only drtcp offers: its
fault injection (dr repairs drops and corruption it injects; a module that
dies makes dr fail over to the stock tcp BTL and ob1 end in a clean error),
and strangers writing garbage to its listening port mid-job.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time

import pytest

import drtcp_hostile
import harness
from test_reliability import counters

# Loopback is excluded by default (like btl tcp); a one-host test names it.
LO = {"btl_drtcp_if_include": "127.0.0.1/8"}


def run_with(pml: str, btl: str = "self,drtcp", **extra: object) -> dict[str, object]:
    return {"pml": pml, "btl": btl, **LO, **extra}


def expect(result, marker: str) -> None:
    result.check()
    assert marker in result.stdout, f"missing {marker!r} in output:\n{result}"


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
@pytest.mark.parametrize("np", [2, 4, 8])
def test_p2p_semantics(mpi, pml, np):
    big_mib = 32 if np <= 4 else 8
    expect(mpi.run("p2p_semantics", np=np, mca=run_with(pml), args=[big_mib]),
           "p2p ok: 16 subtests")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
@pytest.mark.parametrize("program,marker,args", [
    ("threads", "threads ok", []),
    ("demo", "demo ok", []),
    ("onesided_io", "onesided_io ok", None),
])
def test_programs(mpi, pml, program, marker, args, tmp_path):
    mca = run_with(pml, osc="pt2pt") if program == "onesided_io" else run_with(pml)
    expect(mpi.run(program, np=3 if program == "threads" else 4, mca=mca,
                   args=[tmp_path] if args is None else args), marker)


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
def test_mpi4py(mpi, pml):
    pytest.importorskip("mpi4py")
    result = mpi.run_python("p2p_mpi4py.py", np=3, mca=run_with(pml))
    result.check()
    assert " ok " in result.stdout, result


@pytest.mark.mpi_timeout(120)
def test_two_links_and_ipv6(mpi):
    """Two sockets per peer (two modules striped by the PML) over IPv6 loopback."""
    result = mpi.run("p2p_semantics", np=3, args=[16],
                     mca={"pml": "ob1", "btl": "self,drtcp", "btl_drtcp_if_include": "::1",
                          "btl_drtcp_links": 2, "btl_drtcp_verbose": 20})
    expect(result, "p2p ok")
    text = result.stdout + result.stderr
    assert "module on lo ::1/128 x 2 links" in text, result


@pytest.mark.mpi_timeout(180)
def test_dr_repairs_drtcp_injected_faults(mpi):
    """drtcp drops 3% and corrupts 2% of the frames it receives; dr's checksums
    and retransmissions deliver every byte, and its counters show the repairs."""
    mca = run_with("dr", btl_drtcp_fault_drop=0.03, btl_drtcp_fault_corrupt=0.02,
                   btl_drtcp_fault_seed=5, pml_dr_ack_timeout=20, pml_dr_stats=1)
    result = mpi.run("demo", np=4, mca=mca, args=[1 << 20])
    expect(result, "demo ok")
    c = counters(result.stdout + result.stderr)
    assert c.get("retransmits", 0) > 0, c
    assert c.get("checksum_errors", 0) + c.get("decode_errors", 0) > 0, c
    assert c.get("abandoned", 0) == 0, c


# drtcp beside the stock tcp BTL: equal exclusivity so the BML uses both.
BESIDE_TCP = {"btl": "self,tcp,drtcp", "btl_drtcp_exclusivity": 100,
              "btl_tcp_if_include": "lo"}


@pytest.mark.mpi_timeout(180)
def test_dr_fails_over_when_drtcp_dies(mpi):
    mca = run_with("dr", **BESIDE_TCP, btl_drtcp_fault_fail_after=300, pml_dr_ack_timeout=50,
                   pml_dr_stats=1, btl_drtcp_verbose=10)
    result = mpi.run("demo", np=2, mca=mca, args=[4 << 20])
    expect(result, "demo ok")
    c = counters(result.stdout + result.stderr)
    assert c.get("paths_lost", 0) >= 1, c
    assert "dies after 300 frames" in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(120)
def test_ob1_ends_in_a_clean_error_when_drtcp_dies(mpi):
    """ob1 cannot fail over: the lost connection is reported through the BTL
    error callback and the job ends with an error, well before the timeout."""
    mca = {"pml": "ob1", "btl": "self,drtcp", **LO, "btl_drtcp_fault_fail_after": 300}
    start = time.monotonic()
    result = mpi.run("demo", np=2, mca=mca, args=[4 << 20], timeout=90)
    assert not result.timed_out, result
    assert result.rc != 0, result
    assert time.monotonic() - start < 60, result


def _garbage_payloads(rng: random.Random) -> list[bytes]:
    hello = struct.pack(">IBBHIIQI", 0x44525443, 1, 0, 0, 0xDEAD, 3, 1, 0)
    return [
        bytes(rng.getrandbits(8) for _ in range(200)),                 # noise
        struct.pack(">IBBHIIQI", 0x44525443, 9, 0, 0, 1, 0, 1, 0) + b"\0" * 4,  # version 9
        hello[:10],                                                      # truncated
        hello + b"\0" * 4,                                               # bad CRC
        b"GET / HTTP/1.0\r\n\r\n",
        b"",                                                             # connect, say nothing
    ]


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("pml", ["ob1", "dr"])
def test_garbage_on_the_listening_port_mid_job(mpi, pml):
    """While the job runs, an outsider connects to drtcp's listening ports
    and sends noise, a wrong version, a truncated and a forged HELLO, an HTTP
    request and nothing at all. The job finishes byte-exact; drtcp logs the
    refusals."""
    port = harness.free_port_block(16)
    mca = run_with(pml, btl_drtcp_port_min_v4=port, btl_drtcp_port_range_v4=16,
                   btl_drtcp_verbose=50, btl_drtcp_connect_timeout=2000)
    stop = threading.Event()
    sent = [0]

    def attack() -> None:
        rng = random.Random(7)
        while not stop.is_set():
            for p in range(port, port + 4):
                for payload in _garbage_payloads(rng):
                    try:
                        with socket.create_connection(("127.0.0.1", p), timeout=1) as s:
                            s.sendall(payload)
                            sent[0] += 1
                            time.sleep(0.01)
                    except OSError:
                        pass
            time.sleep(0.05)

    t = threading.Thread(target=attack, daemon=True)
    t.start()
    try:
        result = mpi.run("demo", np=4, mca=mca, args=[1 << 20])
    finally:
        stop.set()
        t.join(5)
    expect(result, "demo ok")
    assert sent[0] > 0, "the attacker never reached a drtcp port: the test proved nothing"
    text = result.stdout + result.stderr
    assert re.search(r"refused a connection from \S+ \((malformed|silent)\)", text), result


# The hostile-peer suite (issue 24): pml dr over drtcp at default
# parameters (authentication on), loopback named as every one-host test
# does, verbose 20 for the counters line each rank logs at finalize.
HOSTILE_MCA = run_with("dr", btl_drtcp_verbose=20)
_REFUSAL = re.compile(r"counters: .*endpoint failures (\d+), refused (\d+) \(([^)]*)\)")
_HOSTILE_COUNTERS = ("malformed", "silent", "flood", "not-for-us", "wrong-job", "beyond-job",
                     "unknown", "bad-link", "address", "duplicate", "replay", "bad-mac")


def refusals(text: str) -> dict[str, int]:
    """drtcp's refusal counters summed over the ranks' finalize lines."""
    total: dict[str, int] = {}
    lines = 0
    for m in _REFUSAL.finditer(text):
        lines += 1
        total["endpoint failures"] = total.get("endpoint failures", 0) + int(m.group(1))
        total["refused"] = total.get("refused", 0) + int(m.group(2))
        for item in m.group(3).split():
            name, value = item.split("=")
            total[name] = total.get(name, 0) + int(value)
    total["lines"] = lines
    return total


@pytest.mark.mpi_timeout(300)
@pytest.mark.parametrize("attack", drtcp_hostile.ATTACKS)
def test_hostile_peers_while_a_job_runs(mpi, tmp_path, attack):
    """While 4 ranks move verified data around a ring over drtcp, a
    stranger hits their listening ports (see drtcp_hostile: noise, huge
    lengths, forged HELLOs for real ranks without the key, unknown ranks and
    jobs, the job's own HELLOs replayed, half-open and one-byte-a-second
    connections, 200 at once). Every hostile connection is closed with no
    reply byte within its bound; the job finishes rc 0 with every byte
    right and no failure; the counters show the refusals."""
    sniff = attack == "replayed_handshake"
    if sniff and not drtcp_hostile.can_sniff():
        pytest.skip("capturing the job's HELLOs on loopback needs CAP_NET_RAW")
    with drtcp_hostile.DrtcpVictim(mpi, tmp_path, HOSTILE_MCA, sniff=sniff) as job:
        expected = drtcp_hostile.ATTACKS[attack](job)
        job.still_running()
        result = job.finish()
    result.check()
    oks = re.findall(r"drtcp victim ok (\d+) 4 (\d+) (\d+)", result.stdout)
    assert len(oks) == 4, result
    assert all(int(n) > 0 for _, _, n in oks), result
    got = refusals(result.stdout + result.stderr)
    assert got["lines"] == 4, f"expected a counters line per rank:\n{result}"
    assert got["endpoint failures"] == 0, got
    for name, want in expected.items():
        if name != "connections":
            assert got.get(name, 0) >= want, f"{name}: {got}"
    assert got["refused"] >= expected["connections"], got
    # Only what the attack can cause: nothing else was refused.
    unexpected = {k: got[k] for k in _HOSTILE_COUNTERS
                  if got.get(k, 0) and k not in expected
                  and k not in ("flood", "silent", "duplicate")}
    assert not unexpected, f"refusals the attack cannot explain: {unexpected} ({got})"


@pytest.mark.mpi_timeout(60)
def test_include_and_exclude_together_is_a_clear_error(mpi):
    result = mpi.run("ring", np=2, mca={"pml": "ob1", "btl": "self,drtcp",
                                        "btl_drtcp_if_include": "lo", "btl_drtcp_if_exclude": "eth0"})
    assert result.rc != 0, result
    assert "mutually exclusive" in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(60)
def test_stock_run_does_not_use_drtcp(mpi):
    """Installed beside the stock tcp BTL, drtcp (lower exclusivity) is not
    chosen for a run that names both."""
    result = mpi.run("ring", np=2, mca={"pml": "ob1", "btl": "self,tcp,drtcp",
                                        "btl_tcp_if_include": "lo", **LO, "btl_base_verbose": 100})
    expect(result, "ring ok")
    text = result.stdout + result.stderr
    assert "Using tcp btl" in text and "Using drtcp btl" not in text, result


@pytest.mark.mpi_timeout(60)
def test_parameters_listed_with_help(mpi):
    result = mpi.run_tool(["ompi_info", "--param", "btl", "drtcp", "--level", "9", "--parsable"])
    result.check()
    for name in ["links", "if_include", "if_exclude", "if_family", "port_min_v4", "port_range_v4",
                 "port_min_v6", "sndbuf", "rcvbuf", "nodelay", "connect_timeout", "user_timeout",
                 "sendq_frames", "fault_drop", "fault_corrupt", "fault_fail_after", "fault_seed",
                 "eager_limit", "max_send_size", "exclusivity"]:
        assert re.search(rf"mca:btl:drtcp:param:btl_drtcp_{name}:help:.+", result.stdout), \
            f"btl_drtcp_{name} without help:\n{result.stdout[:3000]}"
