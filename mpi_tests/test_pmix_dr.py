"""pmix dr: the launcher's PMIx server (mpirun, orted) and client (every MPI
process) replaced by our component, selected with --mca pmix dr.

Every job runs twice through the `pmix` fixture: "stock" (the component
installed but not named, so ext3x serves it) proves the program and the
expectation right; "dr" runs the same job on our component and is skipped
while mca_pmix_dr.so is not built. What each job needs from PMIx:

    hello           the start-up exchange (put/commit/fence), a barrier
    ring            BTL contact keys: vader LOCAL, tcp GLOBAL
    dmodex          no fence at start-up: every key fetched on demand
                    (pmix_base_async_modex 1, pmix_base_collect_data 0)
    abort           MPI_Abort -> exit code 3, the blocked ranks killed
    killed rank     a rank dying of SIGKILL ends the job, no hang
    spawn           spawn, connect of two jobs, CID agreement, disconnect
    connect_accept  publish/lookup/unpublish and connect/accept in one job
    fake hosts      several daemons: fences across them, remote dmodex
    robustness      forged and malformed clients, a rank dying mid-fence,
                    an abnormal exit notified to the survivors' handlers
    hostile         strangers on the server's socket while a job runs: noise,
                    huge lengths, unknown identities, silent, slow and 200
                    concurrent clients, and (as root) a client of another uid
"""

from __future__ import annotations

import os
import re
import stat

import pytest

import harness
import pmix_hostile

VERBOSE = {"pmix_base_verbose": 10}
DMODEX = {"pmix_base_async_modex": 1, "pmix_base_collect_data": 0}


def modex_mca(pmix: dict[str, str], modex: str) -> dict[str, object]:
    """The settings of a modex mode. Stock ext3x itself fails MPI_Init in about
    1 of 30 direct-modex runs on this machine ("Unknown error"; pmix dr: 0 of
    30), so its direct-modex variants are skipped: the fence variants already
    prove the programs right."""
    if modex != "dmodex":
        return {}
    if not pmix:
        pytest.skip("ext3x's own direct modex fails now and then; see modex_mca")
    return DMODEX
MULTI_HOST_BTL = {"btl": "self,tcp"}


def needs(components, *ids: str) -> None:
    missing = [i for i in ids if not any(c.id == i for c in components)]
    if missing:
        pytest.skip(f"not built: {', '.join(missing)}")


@pytest.fixture(params=["", "dr"], ids=["stock", "dr"])
def pmix(request, components) -> dict[str, str]:
    """MCA settings naming the pmix component under test ({} = stock ext3x)."""
    if request.param:
        needs(components, f"pmix/{request.param}")
        return {"pmix": request.param}
    return {}


def expect(result, marker: str) -> None:
    result.check()
    assert marker in result.stdout, f"missing {marker!r}:\n{result}"


def pmix_selections(result) -> dict[str, int]:
    """How many processes (mpirun, daemons, ranks) selected each pmix component."""
    counts = harness.selections(result.stdout + result.stderr)["pmix"]
    return {name: n for (name,), n in counts.items()}


SERVED = re.compile(r"served (\d+) connections \((\d+) refused, (\d+) bad messages, "
                    r"(\d+) of another user, (\d+) late hellos\)")


def served_counters(result) -> dict[str, int]:
    """mpirun's server counters (pmix_dr_verbose >= 20), one host."""
    found = SERVED.findall(result.stdout + result.stderr)
    assert len(found) == 1, f"no (or several) server counters:\n{result}"
    return dict(zip(("served", "refused", "bad", "foreign", "late"), map(int, found[0])))


def hello_lines(result) -> list[str]:
    return re.findall(r"^hello from rank \d+ of \d+ on \S+$", result.stdout, re.M)


# ----------------------------------------------------------------- one host


@pytest.mark.mpi_timeout(60)
def test_selected_when_named(mpi, components):
    """With --mca pmix dr, mpirun and both ranks run on our component, and the
    start-up exchange, barrier and allgather of hello complete."""
    needs(components, "pmix/dr")
    result = mpi.run("hello", np=2, mca={"pmix": "dr", **VERBOSE})
    expect(result, "hello ok 2")
    assert len(hello_lines(result)) == 2, result
    assert pmix_selections(result) == {"dr": 3}, result


def test_parameters_listed_with_help(mpi, components):
    """ompi_info lists every pmix dr parameter with its help text."""
    needs(components, "pmix/dr")
    result = mpi.run_tool(["ompi_info", "--param", "pmix", "dr", "--level", "9"])
    result.check()
    for name in ("verbose", "max_msg_size", "get_timeout", "max_pending", "check_peer_uid",
                 "hello_timeout"):
        assert re.search(rf"pmix_dr_{name}\b.*\n\s+\S", result.stdout), name
    check = re.search(r"pmix_dr_check_peer_uid\b.*\n((?:\s+\S.*\n)+)", result.stdout)
    assert check and "debugging" in check.group(1), result


@pytest.mark.mpi_timeout(60)
def test_stock_run_does_not_use_it(mpi):
    """Installed but not named, the component stays out of the way: mpirun
    and every rank select ext3x, as without it."""
    result = mpi.run("hello", np=2, mca=VERBOSE)
    expect(result, "hello ok 2")
    assert len(hello_lines(result)) == 2, result
    assert pmix_selections(result) == {"ext3x": 3}, result
    assert not harness.load_errors(result.stdout + result.stderr), result


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("modex", ["fence", "dmodex"])
def test_ring_over_vader_and_tcp(mpi, pmix, modex):
    """Four ranks find each other's vader (LOCAL) and tcp (GLOBAL) contact
    keys, either all at start-up or fetched on demand."""
    mca = {**pmix, "btl": "self,vader,tcp", **modex_mca(pmix, modex)}
    expect(mpi.run("ring", np=4, mca=mca), "ring ok 4")


@pytest.mark.mpi_timeout(60)
def test_hello_with_dmodex(mpi, pmix):
    """No start-up fence at all: the allgather's peers are found on demand."""
    result = mpi.run("hello", np=3, mca={**pmix, **modex_mca(pmix, "dmodex")})
    expect(result, "hello ok 3")
    assert len(hello_lines(result)) == 3, result


@pytest.mark.mpi_timeout(60)
@pytest.mark.parametrize("np", [1, 4])
def test_abort_exit_code(mpi, pmix, np):
    """MPI_Abort(3) while the other ranks block: mpirun exits 3, promptly."""
    result = mpi.run("abort", np=np, mca=pmix, timeout=30)
    assert not result.timed_out and result.rc == 3, result
    assert "calling MPI_Abort(3)" in result.stdout, result
    assert "received a message nobody sent" not in result.stderr, result


@pytest.mark.mpi_timeout(60)
def test_killed_rank_ends_the_job(mpi, pmix):
    """A rank dies of SIGKILL without telling anyone: mpirun notices and
    ends the job with a non-zero code instead of waiting for it."""
    result = mpi.run("abort", np=3, mca=pmix, args=["kill"], timeout=30)
    assert not result.timed_out and result.rc not in (0, None), result
    assert "killing itself" in result.stdout, result


@pytest.mark.mpi_timeout(120)
def test_hostile_clients_are_closed(mpi, components):
    """Rank 0 attacks its own server with malformed headers, forged hellos
    (wrong secret, unregistered rank, a second connection of a connected
    client), a request before hello and 70 silent connections. The server
    closes each of them, counts them, and keeps serving the job."""
    needs(components, "pmix/dr")
    result = mpi.run("pmix_garbage", np=2, mca={"pmix": "dr", "pmix_dr_verbose": 20})
    expect(result, "garbage ok 2")
    assert len(re.findall(r"^closed: ", result.stdout, re.M)) == 10, result
    c = served_counters(result)
    assert c["served"] == 2 + 9 + 70 and c["refused"] >= 5 + 6 and c["bad"] == 4, result
    assert c["foreign"] == 0, result


HOSTILE_MCA = {"pmix": "dr", "pmix_dr_verbose": 20,
               "pmix_dr_hello_timeout": pmix_hostile.HELLO_TIMEOUT}


def victim_ok(result, np: int = 2) -> None:
    """The attacked job finished, right, and nothing crashed."""
    expect(result, f"victim ok {np} ")
    out = result.stdout + result.stderr
    assert not re.search(r"exited on signal|core dumped|Segmentation fault", out), result


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("attack", pmix_hostile.ATTACKS)
def test_hostile_clients_while_a_job_runs(mpi, components, tmp_path, attack):
    """While a two-rank job keeps asking its server for things (publish,
    lookup, unpublish in a loop), a stranger of the same user attacks the
    server's socket (see pmix_hostile: noise, huge lengths, unknown
    identities, half-open, one byte a second, 200 at once). Each of its
    connections is closed without a reply, within a bound; the job is still
    served right after and finishes with the right output; the server counts
    exactly those connections. (The silent, slow and crowd attacks and the
    prompt refusal of a large length need the hello deadline and the bound
    before Hello.)"""
    needs(components, "pmix/dr")
    with pmix_hostile.VictimJob(mpi, tmp_path, HOSTILE_MCA) as job:
        job.still_served()
        expected = pmix_hostile.ATTACKS[attack](job)
        connections = expected.pop("connections")
        job.still_served()
        result = job.finish()
    victim_ok(result)
    c = served_counters(result)
    moved = {k: c[k] for k in ("refused", "bad", "foreign", "late")}
    assert moved == {"refused": 0, "bad": 0, "foreign": 0, "late": 0, **expected}, result
    assert c["served"] == 2 + connections, result


def owner_only(path: str) -> None:
    st = os.stat(path)
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0, \
        f"{path}: uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}"


def nobody_through_fd(uri: str, **kwargs) -> dict:
    """A client of uid nobody that reaches the socket file past its 0700
    directory (an O_PATH descriptor root opened for it)."""
    fd = os.open(uri, os.O_PATH)
    try:
        return pmix_hostile.run_as_nobody(f"/proc/self/fd/{fd}", pass_fds=(fd,), **kwargs)
    finally:
        os.close(fd)


@pytest.fixture
def as_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (to run a client as nobody)")


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("session_dir", ["default", "too_long"])
def test_another_user_is_refused(mpi, components, tmp_path, as_root, session_dir):
    """The server's socket sits in a directory of its own, both owner-only,
    also when the session directory is too long for a socket path (then in
    /tmp; no abstract socket, which anyone could reach): a client running as
    nobody cannot connect (EACCES), not even past the directory while the
    socket keeps its own mode. With the socket opened up, the server reads
    the peer's credentials first and closes a nobody client at once (long
    before the hello deadline), silent or with a Hello, unanswered, counts
    both and logs their uid; the job is unaffected."""
    needs(components, "pmix/dr")
    mca = {"pmix": "dr", "pmix_dr_verbose": 20}
    if session_dir == "too_long":
        base = tmp_path / ("s" * 110)
        base.mkdir()
        mca["orte_tmpdir_base"] = str(base)
    with pmix_hostile.VictimJob(mpi, tmp_path, mca) as job:
        assert not job.uri.startswith("@"), job.uri
        assert stat.S_ISSOCK(os.stat(job.uri).st_mode)
        parent = os.path.dirname(job.uri)
        assert os.path.basename(parent).startswith("dr-pmix."), job.uri
        owner_only(job.uri)
        owner_only(parent)
        assert pmix_hostile.run_as_nobody(job.uri) == {"error": "EACCES"}
        assert nobody_through_fd(job.uri) == {"error": "EACCES"}

        os.chmod(job.uri, 0o666)
        silent = nobody_through_fd(job.uri, within=8)
        forged = nobody_through_fd(job.uri, within=8,
                                   payload=pmix_hostile.hello(job.jobid, job.vpid, 1))
        job.still_served()
        result = job.finish()
    for what, seen in (("silent", silent), ("forged hello", forged)):
        assert seen["closed_after"] is not None and seen["closed_after"] < 3, (what, seen)
        assert seen["reply_bytes"] == 0, (what, seen)
    victim_ok(result)
    c = served_counters(result)
    assert (c["foreign"], c["refused"], c["bad"], c["late"]) == (2, 2, 0, 0), result
    refusals = re.findall(r"refused a connection from uid 65534 gid 65534 pid \d+: another user",
                          result.stdout + result.stderr)
    assert len(refusals) == 2, result


@pytest.mark.mpi_timeout(240)
def test_peer_check_can_be_turned_off(mpi, components, tmp_path, as_root):
    """pmix_dr_check_peer_uid=0 (debugging): a nobody client that reaches
    the socket is heard like anyone else: it stays connected while silent,
    and its forged Hello is refused as an unknown identity, not for its uid."""
    needs(components, "pmix/dr")
    mca = {"pmix": "dr", "pmix_dr_verbose": 20, "pmix_dr_check_peer_uid": 0}
    with pmix_hostile.VictimJob(mpi, tmp_path, mca) as job:
        os.chmod(job.uri, 0o666)
        silent = nobody_through_fd(job.uri, within=2)
        forged = nobody_through_fd(job.uri, within=8,
                                   payload=pmix_hostile.hello(job.jobid, 4000000, 1))
        result = job.finish()
    assert silent["closed_after"] is None, silent
    assert forged["closed_after"] is not None and forged["reply_bytes"] == 0, forged
    victim_ok(result)
    c = served_counters(result)
    assert (c["foreign"], c["refused"], c["bad"], c["late"]) == (0, 1, 0, 0), result
    assert "refused a connection from uid" not in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(60)
def test_abnormal_exit_is_notified(mpi, components):
    """With --enable-recovery ORTE does not kill the job when a rank dies: it
    notifies the others (OPAL_ERR_PROC_ABORTED, -57) through every daemon's
    PMIx server. Our clients run their handler chain (ORTE's and MPI's
    default handlers), and MPI's aborts the blocked survivors, so the job
    ends. (Stock ext3x hangs in this setup on this machine: PMIx's event
    code rejects ORTE's notification with BAD-PARAM.)"""
    needs(components, "pmix/dr")
    result = mpi.run("abort", np=3, args=["kill"], timeout=30,
                     mca={"pmix": "dr", "pmix_dr_verbose": 50},
                     mpirun_args=["--enable-recovery"])
    assert not result.timed_out, result
    out = result.stdout + result.stderr
    notified = re.findall(r"event -57 from \d+\.1: (\d+) handlers", out)
    assert len(notified) == 2 and all(int(n) >= 2 for n in notified), result


@pytest.mark.mpi_timeout(60)
def test_death_mid_fence_fails_the_fence(mpi, components):
    """Rank 1 dies while ranks 0 and 2 wait for it in MPI_Finalize's fence
    (with --enable-recovery, so ORTE leaves the job to us): the server fails
    that fence for the survivors instead of letting them wait, and the job
    ends."""
    needs(components, "pmix/dr")
    result = mpi.run("fence_death", np=3, timeout=30, mpirun_args=["--enable-recovery"],
                     mca={"pmix": "dr", "pmix_dr_verbose": 20})
    assert not result.timed_out, result
    assert "rank 1 dies mid-fence" in result.stdout, result
    assert re.search(r"\[pmix:dr\] served .* fences \(1 failed\)",
                     result.stdout + result.stderr), result


@pytest.mark.mpi_timeout(120)
def test_dead_peer_reported_by_pml_dr(mpi, programs, components, pmix):
    """The peer_death job of test_reliability (rank 1's network dies, pml dr
    declares the peer dead, both ranks get an error and finish cleanly)."""
    needs(components, "pml/dr")
    prog = str(programs.get("peer_death"))
    argv = [prog, "20", ":", "-np", "1",
            "-x", "OMPI_MCA_pml_dr_fault_fail_btl=tcp",
            "-x", "OMPI_MCA_pml_dr_fault_fail_after=100", prog, "20"]
    result = mpi.run(argv, np=1, mca={**pmix, "pml": "dr", "btl": "self,tcp",
                                      "pml_dr_ack_timeout": 50, "pml_dr_ack_retries": 2,
                                      "pml_dr_peer_dead_timeout": 1000})
    expect(result, "peer_death ok")


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("np", [1, 2])
def test_spawn(mpi, pmix, np):
    """Parents spawn 2 children, talk over the intercommunicator, merge it
    and disconnect."""
    expect(mpi.run("spawn", np=np, mca=pmix), f"spawn OK {np} 2")


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("np", [2, 4])
def test_connect_accept(mpi, pmix, np):
    """Two halves of a job connect through a published name, then through
    a port string passed by hand."""
    result = mpi.run("connect_accept", np=np, mca=pmix, args=[30])
    expect(result, "connect/accept OK publish")
    expect(result, "connect/accept OK bcast")


@pytest.mark.mpi_timeout(120)
def test_thread_multiple(mpi, pmix):
    """MPI_THREAD_MULTIPLE: the client is initialised and used while several
    threads per rank communicate (its I/O thread beside them)."""
    expect(mpi.run("threads", np=3, mca={**pmix, "btl": "self,vader,tcp"}), "threads ok")


@pytest.mark.mpi_timeout(120)
def test_mpi4py(mpi, pmix):
    """A third-party MPI client (mpi4py, a Python interpreter) starts and talks."""
    expect(mpi.run_python("p2p_mpi4py.py", np=3, mca=pmix), "p2p_mpi4py ok 3")


# ------------------------------------------------------- several daemons


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("modex", ["fence", "dmodex"])
def test_hello_across_daemons(mpi, pmix, fake_hosts, modex):
    """Two daemons: mpirun, both orteds and all four ranks run the component
    under test, and the exchange spans daemons (grpcomm) or is served by
    the remote daemon on demand."""
    mca = {**pmix, **MULTI_HOST_BTL, **VERBOSE, **modex_mca(pmix, modex)}
    result = mpi.run("hello", np=4, mca=mca, mpirun_args=fake_hosts(2))
    expect(result, "hello ok 4")
    assert len(hello_lines(result)) == 4, result
    assert pmix_selections(result) == {pmix.get("pmix", "ext3x"): 7}, result


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("modex", ["fence", "dmodex"])
def test_ring_across_daemons(mpi, pmix, fake_hosts, modex):
    """tcp contact keys of ranks under another daemon, exchanged or fetched."""
    mca = {**pmix, **MULTI_HOST_BTL, **modex_mca(pmix, modex)}
    expect(mpi.run("ring", np=4, mca=mca, mpirun_args=fake_hosts(2)), "ring ok 4")


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("test", ["spawn", "connect_accept"])
def test_dynamic_processes_across_daemons(mpi, pmix, fake_hosts, test):
    """Spawned children and the two halves of connect/accept sit under
    different daemons: the new job is registered on every daemon, and the
    other group's contact keys come from the daemon that hosts them."""
    mca = {**pmix, **MULTI_HOST_BTL}
    np = 1 if test == "spawn" else 4
    marker = "spawn OK" if test == "spawn" else "connect/accept OK"
    expect(mpi.run(test, np=np, mca=mca, mpirun_args=fake_hosts(2)), marker)


# ------------------------------------------------- with our other components


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("hosts", [0, 2])
def test_with_all_our_components(mpi, components, pmix, fake_hosts, hosts):
    """pml dr over btl drtcp, the runtime on oob drtcp, and the pmix under
    test; on one host and across two daemons."""
    needs(components, "pml/dr", "btl/drtcp", "oob/drtcp")
    mca = {**pmix, "pml": "dr", "btl": "self,drtcp", "oob": "drtcp"}
    args = fake_hosts(hosts) if hosts else []
    expect(mpi.run("ring", np=4, mca=mca, mpirun_args=args), "ring ok 4")
