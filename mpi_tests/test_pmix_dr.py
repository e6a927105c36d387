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
"""

from __future__ import annotations

import re

import pytest

import harness

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
    for name in ("verbose", "max_msg_size", "get_timeout", "max_pending"):
        assert re.search(rf"pmix_dr_{name}\b.*\n\s+\S", result.stdout), name


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
    m = re.search(r"served (\d+) connections \((\d+) refused, (\d+) bad messages\)",
                  result.stdout + result.stderr)
    assert m, result
    served, refused, bad = map(int, m.groups())
    assert served == 2 + 9 + 70 and refused >= 5 + 6 and bad == 4, result


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
