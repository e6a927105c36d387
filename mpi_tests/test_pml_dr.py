"""pml dr runs real MPI programs over the stock BTLs, byte-exact.

The matrix covers BTL sets {self,vader}, {self,tcp}, {self,vader,tcp} and 2 to 8
ranks. Every program verifies every byte it receives and exits non-zero on any
mismatch; each run has a hard timeout.
"""

from __future__ import annotations

import pytest

BTL_SETS = ["self,vader", "self,tcp", "self,vader,tcp"]


def dr(btl: str, **extra: object) -> dict[str, object]:
    return {"pml": "dr", "btl": btl, **extra}


def expect(result, marker: str) -> None:
    result.check()
    assert marker in result.stdout, f"missing {marker!r} in output:\n{result}"


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", BTL_SETS)
@pytest.mark.parametrize("np", [2, 4, 8])
def test_p2p_semantics(mpi, btl, np):
    # 8 ranks on 2 cores: keep the large-message subtest smaller.
    big_mib = 64 if np <= 4 else 16
    expect(mpi.run("p2p_semantics", np=np, mca=dr(btl), args=[big_mib]), "p2p ok: 16 subtests")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("csum", ["always", "never"])
def test_p2p_semantics_checksum_modes(mpi, csum):
    expect(mpi.run("p2p_semantics", np=3, mca=dr("self,vader,tcp", pml_dr_csum=csum), args=[32]),
           "p2p ok")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_thread_multiple(mpi, btl):
    expect(mpi.run("threads", np=3, mca=dr(btl)), "threads ok")


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_thread_multiple_probes_one_way(mpi, btl):
    # The receiver's ACKs ride on its timer while threads spin in progress:
    # the timer's callback and a poll of it under the PML's lock deadlocked
    # (MPICH threads/pt2pt/mt_mprobe_* over tcp; the peer was declared dead).
    expect(mpi.run("threads_probe", np=2, mca=dr(btl)), "threads_probe ok")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", ["self,vader", "self,vader,tcp"])
def test_onesided_and_io(mpi, btl, tmp_path):
    expect(mpi.run("onesided_io", np=4, mca=dr(btl, osc="pt2pt"), args=[tmp_path]), "onesided_io ok")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_communicators_freed_while_frames_wait_for_acks(mpi, btl):
    # Open MPI destroys an EXTRA_RETAIN intercommunicator duplicate, and every
    # communicator at finalize, whatever requests still hold them: a send
    # request waiting for its ACKs must have let go (it crashed over tcp).
    expect(mpi.run("comm_lifetime", np=4, mca=dr(btl), args=[200]), "COMM_LIFETIME OK")


@pytest.mark.mpi_timeout(120)
def test_communicator_limit_is_ob1s(mpi):
    # MPI_Comm_dup fails cleanly once as many communicators are alive as ob1
    # allows (65535 context ids), not after memory ran out (MPICH's
    # errors/comm/too_many_comms), and the freed ids come back.
    counts = {}
    for pml in ("ob1", "dr"):
        result = mpi.run("comm_limit", np=2, mca={"pml": pml, "btl": "self,vader"})
        expect(result, "comm_limit ok")
        counts[pml] = int(result.stdout.split("comm_limit ")[1].split()[0])
    assert counts["dr"] == counts["ob1"] < 200000, counts


@pytest.mark.mpi_timeout(60)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_completed_sends_arrive_while_the_sender_stays_out_of_mpi(mpi, btl):
    # An eager send completes once a BTL has its data, as with ob1: tcp
    # queues frames while its socket is full, and only the sender's progress
    # moves them (the previous build hung here every time over tcp, as in
    # MPICH's rma/mutex_bench_shm).
    expect(mpi.run("send_then_spin", np=2, mca=dr(btl)), "SEND_THEN_SPIN OK")


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_demo_program(mpi, btl):
    expect(mpi.run("demo", np=4, mca=dr(btl)), "demo ok")


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("script", ["hello_mpi4py.py", "p2p_mpi4py.py"])
def test_mpi4py(mpi, script):
    pytest.importorskip("mpi4py")
    result = mpi.run_python(script, np=3, mca=dr("self,vader,tcp"))
    result.check()
    assert " ok " in result.stdout, result


@pytest.mark.mpi_timeout(120)
def test_same_results_as_ob1(mpi):
    """The reference: the same program passes under ob1 on the same BTLs."""
    expect(mpi.run("p2p_semantics", np=4, mca={"pml": "ob1", "btl": "self,vader,tcp"}, args=[16]),
           "p2p ok: 16 subtests")


@pytest.mark.mpi_timeout(60)
def test_dr_is_reported_selected(mpi):
    result = mpi.run("ring", np=2, mca=dr("self,vader", pml_base_verbose=10))
    result.check()
    assert "select: component dr selected" in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", ["self,vader", "self,tcp"])
def test_unexpected_memory_is_bounded(mpi, btl):
    """A flood of unexpected messages stays within pml_dr_unexpected_limit."""
    import re

    limit = 65536
    result = mpi.run("p2p_semantics", np=2, args=[8],
                     mca=dr(btl, pml_dr_unexpected_limit=limit, pml_dr_stats=1))
    expect(result, "p2p ok")
    peaks = [int(m) for m in re.findall(r"unexpected_peak_bytes=(\d+)", result.stdout + result.stderr)]
    assert len(peaks) == 2, result
    # The flood subtest alone queues 6 MB unless flow control holds it back.
    assert max(peaks) <= limit, f"unexpected store peaked at {max(peaks)} bytes > {limit}"
    assert max(peaks) > 0, "the flood produced no unexpected messages: the test proves nothing"


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("coll", ["basic,libnbc,self", "tuned,basic,libnbc,self"])
def test_collective_components(mpi, coll):
    """Collectives of coll basic, tuned and libnbc (the Ibcast/Iallreduce subtests) over dr."""
    expect(mpi.run("p2p_semantics", np=4, mca=dr("self,vader,tcp", coll=coll), args=[16]), "p2p ok")


def local_counts(text: str) -> list[dict[str, int]]:
    """What each process's pml_dr_stats says of trusted local paths."""
    import re

    rx = (r"\[pml:dr\] local \[\[\d+,\d+\],(\d+)\]: local_sent=(\d+) local_received=(\d+) "
          r"untrusted_local=(\d+)")
    return [dict(zip(("rank", "sent", "received", "untrusted"), map(int, m)))
            for m in re.findall(rx, text)]


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["self,vader", "self,vader,tcp"])
def test_small_messages_to_peers_on_the_node_go_as_local_match(mpi, btl):
    """At defaults, small messages between ranks of one node take the trusted
    local path (README "Trusted local paths"), also with tcp loaded (the BML
    keeps only vader for a peer on the node); pml_dr_trust_local=0 sends none."""
    on = mpi.run("p2p_semantics", np=2, args=[8], mca=dr(btl, pml_dr_stats=1))
    expect(on, "p2p ok")
    counts = local_counts(on.stdout + on.stderr)
    assert len(counts) == 2, on
    assert all(c["sent"] > 10 and c["received"] > 10 and c["untrusted"] == 0 for c in counts), counts
    assert sum(c["sent"] for c in counts) == sum(c["received"] for c in counts), counts

    off = mpi.run("p2p_semantics", np=2, args=[8],
                  mca=dr(btl, pml_dr_stats=1, pml_dr_trust_local=0))
    expect(off, "p2p ok")
    counts = local_counts(off.stdout + off.stderr)
    assert len(counts) == 2, off
    assert all(c["sent"] == 0 and c["received"] == 0 for c in counts), counts


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("np", [2, 4])
def test_p2p_semantics_with_the_full_protocol_on_memory_paths(mpi, np):
    """pml_dr_trust_local=0: sequence numbers, ACKs and kept copies over vader too
    (the protocol every other BTL gets), by the same programs."""
    expect(mpi.run("p2p_semantics", np=np, args=[32],
                   mca=dr("self,vader", pml_dr_trust_local=0)), "p2p ok")


@pytest.mark.mpi_timeout(120)
def test_a_rank_that_does_not_trust_gets_the_full_protocol_both_ways(mpi, programs):
    """pml_dr_trust_local=0 on rank 1 alone (or a fault injected on its side
    only): each process publishes whether it sends LOCAL_MATCH, and none goes
    between the two ranks in either direction; rank 0's messages to itself
    still do."""
    prog = str(programs.get("p2p_semantics"))
    argv = [prog, "8", ":", "-np", "1", "-x", "OMPI_MCA_pml_dr_trust_local=0", prog, "8"]
    result = mpi.run(argv, np=1, mca=dr("self,vader", pml_dr_stats=1))
    expect(result, "p2p ok")
    counts = {c["rank"]: c for c in local_counts(result.stdout + result.stderr)}
    assert sorted(counts) == [0, 1], result
    assert counts[1]["sent"] == 0 and counts[1]["received"] == 0, counts
    assert counts[0]["sent"] == counts[0]["received"], counts  # to itself only
