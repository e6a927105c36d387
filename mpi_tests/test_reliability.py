"""pml dr reliability in real MPI jobs: injected loss, corruption and
duplication, a BTL that dies mid-transfer, and a peer that stops answering.

Every program verifies every byte it receives. The recovery counters printed
with pml_dr_stats must show that the faults really happened and were repaired,
so a run where the injection silently did nothing fails.
"""

from __future__ import annotations

import re

import pytest

BTL_SETS = ["self,vader", "self,tcp", "self,vader,tcp"]

# Short ACK timeouts so that tail losses are repaired in milliseconds.
FAULTS = {
    "pml_dr_fault_drop": 0.05,
    "pml_dr_fault_corrupt": 0.02,
    "pml_dr_fault_dup": 0.02,
    "pml_dr_fault_seed": 11,
    "pml_dr_ack_timeout": 20,
    "pml_dr_stats": 1,
}

# Two BTLs that both reach every local peer: tcp's exclusivity raised to
# vader's (otherwise the BML uses vader alone), and vader without single-copy
# gets so that long messages move as frags over both.
TWO_PATHS = {
    "btl": "self,vader,tcp",
    "btl_tcp_exclusivity": 65536,
    "btl_tcp_bandwidth": 20000,
    "btl_vader_single_copy_mechanism": "none",
}


def dr(btl: str | None = None, **extra: object) -> dict[str, object]:
    settings: dict[str, object] = {"pml": "dr"}
    if btl:
        settings["btl"] = btl
    settings.update(extra)
    return settings


def counters(text: str) -> dict[str, int]:
    """Sums of every name=value counter on the [pml:dr] stats lines of a run
    (per-path lines repeat the per-peer figures and are left out)."""
    sums: dict[str, int] = {}
    for line in text.splitlines():
        if "[pml:dr]" not in line or "[pml:dr] path " in line:
            continue
        for name, value in re.findall(r"(\w+)=(\d+)", line):
            sums[name] = sums.get(name, 0) + int(value)
    return sums


def expect_ok(result, marker: str) -> dict[str, int]:
    result.check()
    assert marker in result.stdout, f"missing {marker!r} in output:\n{result}"
    return counters(result.stdout + result.stderr)


@pytest.mark.mpi_timeout(240)
@pytest.mark.parametrize("btl", BTL_SETS)
def test_demo_survives_injected_faults(mpi, btl):
    c = expect_ok(mpi.run("demo", np=4, mca=dr(btl, **FAULTS), args=[1 << 20]), "demo ok")
    assert c.get("injected_drops", 0) > 0, c
    assert c.get("injected_corruptions", 0) > 0, c
    assert c.get("injected_duplicates", 0) > 0, c
    # Losses were repaired by resending; corruption was caught by a checksum
    # (corrupted headers count as checksum errors too); duplicates were
    # recognised and not delivered twice.
    assert c.get("retransmits", 0) > 0, c
    assert c.get("checksum_errors", 0) + c.get("decode_errors", 0) > 0, c
    assert c.get("duplicates_dropped", 0) > 0, c
    assert c.get("abandoned", 0) == 0, c


@pytest.mark.mpi_timeout(240)
def test_mpi_semantics_hold_under_faults(mpi):
    """Ordering, wildcards, probes, cancel, Ssend, datatypes, collectives: all of
    p2p_semantics, with a tenth of the frames lost and some corrupted."""
    # Its flood subtest keeps the receiver out of MPI (acknowledging nothing)
    # for 300 ms: with 20 ms ACK timeouts the default 5 retries give the path
    # 420 ms, too little on a loaded machine; 10 give it 1.3 s.
    faults = dict(FAULTS, pml_dr_fault_drop=0.1, pml_dr_fault_corrupt=0.05, pml_dr_ack_retries=10)
    c = expect_ok(mpi.run("p2p_semantics", np=3, mca=dr("self,vader,tcp", **faults), args=[16]),
                  "p2p ok: 16 subtests")
    assert c.get("retransmits", 0) > 0, c


@pytest.mark.mpi_timeout(120)
def test_mpi4py_under_faults(mpi):
    pytest.importorskip("mpi4py")
    result = mpi.run_python("p2p_mpi4py.py", np=3, mca=dr("self,vader", **FAULTS))
    result.check()
    assert " ok " in result.stdout, result


@pytest.mark.mpi_timeout(180)
def test_failover_when_a_btl_dies_mid_transfer(mpi):
    """tcp dies after 200 frames while 4 MiB messages are striped over vader and
    tcp: every byte still arrives, through vader."""
    mca = dr(**TWO_PATHS, pml_dr_fault_fail_btl="tcp", pml_dr_fault_fail_after=200,
             pml_dr_ack_timeout=50, pml_dr_stats=1, pml_dr_verbose=20)
    result = mpi.run("demo", np=2, mca=mca, args=[4 << 20])
    c = expect_ok(result, "demo ok")
    assert c.get("failovers", 0) >= 1, c
    assert c.get("paths_lost", 0) >= 1, c
    text = result.stdout + result.stderr
    assert "BTL tcp dies after 200 frames" in text, result
    # Per path: tcp failed, vader carried the rest.
    assert re.search(r"\] path .* over tcp: .*failures=[1-9].*state=failed", text), result
    assert re.search(r"\] path .* over vader: .*state=alive", text), result


@pytest.mark.mpi_timeout(120)
def test_without_failure_both_paths_carry_data(mpi):
    """The two-path setup of the failover test really stripes over both BTLs
    (otherwise that test would prove nothing)."""
    result = mpi.run("demo", np=2, mca=dr(**TWO_PATHS, pml_dr_verbose=50), args=[4 << 20])
    expect_ok(result, "demo ok")
    text = result.stdout + result.stderr
    assert "path over BTL tcp" in text and "path over BTL vader" in text, result


@pytest.mark.mpi_timeout(120)
def test_a_standby_path_carries_nothing_while_the_bml_path_works(mpi):
    """dr over self,vader,tcp on one host, default parameters: the BML gives
    local peers vader alone; tcp reaches them too and becomes a standby path
    of every peer (3 ranks x 2 peers), which must carry nothing while vader
    works: no frame sent or received on it (a path with traffic gets a stats
    line) and no tcp connection opened."""
    mca = dr("self,vader,tcp", pml_dr_stats=1, pml_dr_verbose=50, btl_base_verbose=30)
    result = mpi.run("demo", np=3, mca=mca)
    c = expect_ok(result, "demo ok")
    text = result.stdout + result.stderr
    assert len(re.findall(r"standby path over BTL tcp", text)) == 6, result
    assert not re.search(r"\] path .* over tcp:", text), result
    assert "attempting to connect()" not in text, result
    assert c.get("promotions", 0) == 0 and c.get("paths_lost", 0) == 0, c
    assert re.search(r"\] path .* over vader: sent=\d{3,}", text), result


# RPUT: with one path (tcp), the receiver of a long message asks the sender
# to write the rest straight into its buffer with BTL puts; with checksums
# (tcp's default) the put data is checked against the sender's CRC.
RPUT = {"btl": "self,tcp", "pml_dr_csum": "never", "pml_dr_stats": 1}
RPUT_DEFAULTS = {"btl": "self,tcp", "pml_dr_stats": 1}


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("csum", ["defaults", "never"])
def test_long_messages_are_put_over_a_single_tcp_path(mpi, csum):
    """Every byte checked; every long message went by puts, none fell back;
    at defaults (checksums on) every put's data was verified."""
    mca = dr(**(RPUT if csum == "never" else RPUT_DEFAULTS))
    result = mpi.run("rail_transfer", np=3, mca=mca, args=[30, 4 << 20])
    c = expect_ok(result, "RAIL_TRANSFER OK")
    assert c.get("rput_sends", 0) > 0, c
    assert c["rput_sends"] == c.get("rput_requests"), c
    assert c.get("rput_fallbacks", 0) == 0, c
    assert c.get("rput_csum_errors", 0) == 0 and c.get("rput_resent", 0) == 0, c
    if csum == "never":
        assert c.get("rput_verified", 0) == 0, c
    else:
        assert c.get("rput_verified", 0) == c["rput_requests"], c


@pytest.mark.mpi_timeout(180)
def test_rndv_without_data_meets_every_kind_of_receive(mpi):
    """A contiguous message past tcp's RNDV frame, which may be put, goes
    with no data in its RNDV. The semantics suite's receives of such messages
    include strided ones, which cannot be put and answer with a CTS: the
    FRAGs must then carry the whole message."""
    result = mpi.run("p2p_semantics", np=2, mca=dr(**RPUT), args=[16])
    c = expect_ok(result, "p2p ok: 16 subtests")
    assert c.get("rput_sends", 0) > 0 and c.get("rput_fallbacks", 0) == 0, c


# tcp with at most 8 descriptors and 8 KiB socket buffers: the semantics
# suite's flood (3000 isends to a receiver that sleeps first) fills the
# socket, tcp queues its descriptors and runs out.
FEW_DESCRIPTORS = {
    "btl_tcp_free_list_max": 8,
    "btl_tcp_sndbuf": 8192,
    "btl_tcp_rcvbuf": 8192,
    "pml_dr_stats": 1,
}


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("faulty", [False, True], ids=["clean", "faults"])
def test_frames_wait_for_a_descriptor_when_the_btl_has_none(mpi, faulty):
    """A frame that finds no free BTL descriptor waits in progress and goes
    once one is back, in order and intact; resends of lost frames may have
    to wait the same way."""
    extra = {"pml_dr_fault_drop": 0.02, "pml_dr_fault_dup": 0.01,
             "pml_dr_ack_timeout": 20} if faulty else {}
    mca = dr("self,tcp", **FEW_DESCRIPTORS, **extra)
    c = expect_ok(mpi.run("p2p_semantics", np=2, mca=mca, args=[16]), "p2p ok: 16 subtests")
    assert c.get("descriptor_waits", 0) > 0, c
    if faulty:
        assert c.get("retransmits", 0) > 0, c
    else:  # a waiting frame the retry lost would be resent by its ACK timer
        assert c.get("retransmits", 0) == 0, c


@pytest.mark.mpi_timeout(120)
def test_long_messages_are_acknowledged_by_their_cts(mpi):
    """A long message over vader's single-copy get asks for no ACK frame of
    its own: the CTS that ends it carries the RNDV's acknowledgement (ack_seq).
    With one ACK frame per RNDV the 200 messages cost >= 200 ACK frames (and
    12% of the bandwidth at 64 KiB); an RNDV that waits unmatched longer than
    pml_dr_ack_delay is still acked by one, hence the margin."""
    mca = dr("self,vader", pml_dr_csum="never", pml_dr_stats=1)
    c = expect_ok(mpi.run("rail_transfer", np=2, mca=mca, args=[100, 1 << 20]), "RAIL_TRANSFER OK")
    assert c.get("sent", 0) >= 400, c  # 200 RNDVs and 200 CTSs at least
    assert c.get("acks_sent", 0) < 100, c
    assert c.get("retransmits", 0) == 0, c


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("csum", ["auto", "never"])
def test_resends_of_completed_sends_come_from_the_kept_copy(mpi, csum):
    """Eager frames of 4-60 KB over tcp go out from the user's buffer
    (prepare_src in place); the application overwrites the buffer as soon
    as the send completes, and the frames lost on the way must still be
    resent with the original bytes."""
    faults = dict(FAULTS, pml_dr_fault_drop=0.1, pml_dr_csum=csum)
    if csum == "never":
        faults["pml_dr_fault_corrupt"] = 0.0  # corruption would force checksums on
    c = expect_ok(mpi.run("reuse_after_send", np=2, mca=dr("self,tcp", **faults), args=[200]),
                  "reuse ok: 200 messages")
    assert c.get("injected_drops", 0) > 0 and c.get("retransmits", 0) > 0, c
    assert c.get("abandoned", 0) == 0, c


@pytest.mark.mpi_timeout(240)
def test_puts_survive_lost_and_duplicated_frames(mpi):
    """The PUT and PUT-done frames are lost and duplicated like any other
    (checksums off: the data is not checked, only the frames' fate counts)."""
    mca = dr(**dict(FAULTS, **RPUT, pml_dr_fault_corrupt=0.0, pml_dr_fault_drop=0.1))
    c = expect_ok(mpi.run("rail_transfer", np=2, mca=mca, args=[40, 2 << 20]), "RAIL_TRANSFER OK")
    assert c.get("injected_drops", 0) > 0 and c.get("injected_duplicates", 0) > 0, c
    assert c.get("retransmits", 0) > 0 and c.get("duplicates_dropped", 0) > 0, c
    assert c.get("rput_sends", 0) > 0 and c.get("rput_fallbacks", 0) == 0, c


@pytest.mark.mpi_timeout(240)
def test_damaged_put_data_is_caught_and_sent_again(mpi):
    """Checksums on (tcp's default): pml_dr_fault_corrupt flips a bit in put
    data where it landed (as well as in frames). The receiver's check of the
    sender's CRC catches every flip, the bytes come again as FRAGs, and
    every message arrives byte-exact; frames are also lost and duplicated."""
    mca = dr(**dict(FAULTS, **RPUT_DEFAULTS, pml_dr_fault_corrupt=0.2, pml_dr_fault_drop=0.05))
    c = expect_ok(mpi.run("rail_transfer", np=2, mca=mca, args=[40, 2 << 20]), "RAIL_TRANSFER OK")
    assert c.get("rput_sends", 0) > 0 and c.get("rput_verified", 0) > 0, c
    assert c.get("rput_injected", 0) > 0, c
    assert c["rput_csum_errors"] == c["rput_injected"], c
    assert c.get("rput_resent", 0) == c["rput_csum_errors"], c


# RGET with checksums: vader's single-copy get stays on when checksums are
# asked for; the sender's CRC of the whole message rides after its handle and
# the receiver checks what the gets brought.
RGET_CSUM = {"btl": "self,vader", "pml_dr_csum": "always", "pml_dr_stats": 1}


@pytest.mark.mpi_timeout(180)
def test_long_messages_are_got_and_verified_with_checksums(mpi):
    """Every long message went by gets, and its data was checked against the
    sender's CRC; nothing was refused or fell back."""
    result = mpi.run("rail_transfer", np=3, mca=dr(**RGET_CSUM), args=[30, 4 << 20])
    c = expect_ok(result, "RAIL_TRANSFER OK")
    assert c.get("rget_receives", 0) > 0, c
    assert c.get("rget_verified", 0) == c["rget_receives"], c
    assert c.get("rget_fallbacks", 0) == 0 and c.get("rget_csum_errors", 0) == 0, c
    assert c.get("rput_sends", 0) == 0, c


@pytest.mark.mpi_timeout(240)
def test_damaged_get_data_is_caught_and_sent_again(mpi):
    """pml_dr_fault_corrupt flips a bit in get data where it landed (as well
    as in frames): the receiver's check catches every flip, the message comes
    again as FRAGs, and every message arrives byte-exact."""
    mca = dr(**dict(FAULTS, **RGET_CSUM, pml_dr_fault_corrupt=0.2))
    c = expect_ok(mpi.run("rail_transfer", np=2, mca=mca, args=[40, 2 << 20]), "RAIL_TRANSFER OK")
    assert c.get("rget_verified", 0) > 0 and c.get("rget_injected", 0) > 0, c
    assert c["rget_csum_errors"] == c["rget_injected"], c
    assert c.get("rget_fallbacks", 0) == c["rget_csum_errors"], c


@pytest.mark.mpi_timeout(120)
def test_no_puts_over_two_paths(mpi):
    """Only one path orders put data ahead of the PUT-done frame: with a
    second path the long messages go as FRAGs."""
    mca = dr(**TWO_PATHS, pml_dr_csum="never", pml_dr_stats=1)
    c = expect_ok(mpi.run("rail_transfer", np=2, mca=mca, args=[10, 4 << 20]), "RAIL_TRANSFER OK")
    assert c.get("rput_requests", 0) == 0, c


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["vader", "tcp"])
def test_dead_peer_is_reported_not_hung(mpi, programs, btl):
    """Rank 1's only network dies after 100 frames. Both ranks must get an
    error code (MPI_ERRORS_RETURN) well within the bound, never hang. Silent
    on its only path, the peer is declared dead by pml_dr_peer_dead_timeout
    (its path is kept: a computing peer sounds the same)."""
    prog = str(programs.get("peer_death"))
    argv = [prog, "20", ":", "-np", "1",
            "-x", f"OMPI_MCA_pml_dr_fault_fail_btl={btl}",
            "-x", "OMPI_MCA_pml_dr_fault_fail_after=100", prog, "20"]
    result = mpi.run(argv, np=1, mca=dr(f"self,{btl}", pml_dr_ack_timeout=50,
                                        pml_dr_ack_retries=2, pml_dr_peer_dead_timeout=1000))
    result.check()
    assert "peer_death ok" in result.stdout, result
    seconds = [float(s) for s in re.findall(r"error after \d+ exchanges, ([\d.]+) s", result.stdout)]
    assert len(seconds) == 2, result
    assert max(seconds) < 10, f"peer death noticed only after {max(seconds)} s:\n{result}"


def dead_peer_checks(result, ranks: tuple[int, ...]) -> None:
    """dead_peer's verdict: every check passed on the surviving `ranks`, and
    rank 0 got through MPI_Finalize."""
    text = result.stdout
    assert "FAILED" not in text, result
    for r in ranks:
        assert f"dead_peer rank {r} ok" in text, result
    assert "dead_peer ok" in text, result


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["vader", "tcp"])
def test_operations_naming_a_dead_peer_fail_at_once(mpi, programs, btl):
    """Rank 1's only network dies mid-exchange; each rank learns the other
    is dead (rank 1 at once: its path fails; rank 0 after
    pml_dr_peer_dead_timeout of silence, the timer this test is about). From
    then on every receive, probe and send naming the dead rank, posted
    later, returns an error within 1 s (they used to hang: the receive was
    queued for a peer that would never send), and both ranks finalize."""
    prog = str(programs.get("dead_peer"))
    argv = [prog, "silent", "20", ":", "-np", "1",
            "-x", f"OMPI_MCA_pml_dr_fault_fail_btl={btl}",
            "-x", "OMPI_MCA_pml_dr_fault_fail_after=100", prog, "silent", "20"]
    result = mpi.run(argv, np=1, mca=dr(f"self,{btl}", pml_dr_peer_dead_timeout=2000))
    result.check()
    dead_peer_checks(result, (0, 1))
    assert "MPI_Recv: error 16 in" in result.stdout, result  # MPI_ERR_OTHER
    assert "MPI_Send: error 16 in" in result.stdout, result


def first_error_seconds(result) -> float:
    m = re.search(r"the receive posted before the death: error \d+ in ([\d.]+) s", result.stdout)
    assert m, result
    return float(m.group(1))


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["vader", "tcp"])
def test_a_peer_the_runtime_saw_die_fails_at_once(mpi, btl):
    """Rank 1 is killed while rank 0's only business with it is a posted
    receive (nothing is pending to it, so no timer of dr's would ever fire).
    mpirun --enable-recovery keeps the job and tells the others (pmix dr
    delivers ORTE's OPAL_ERR_PROC_ABORTED event): pml dr fails the peer at
    once, the receive and a wildcard on the pair of ranks 0 and 1 fail, a
    wildcard on MPI_COMM_WORLD waits for rank 2, everything posted later
    against rank 1 fails, and the survivors finalize. Without the handler
    Open MPI's default one aborted the survivors, MPI_ERRORS_RETURN or not."""
    result = mpi.run("dead_peer", np=3, mca=dr(f"self,{btl}", pmix="dr"), args=["kill", 20],
                     mpirun_args=["--enable-recovery"])
    result.check()
    dead_peer_checks(result, (0, 2))
    assert first_error_seconds(result) < 5, result  # the event, not a timeout


@pytest.mark.mpi_timeout(120)
def test_a_connection_broken_by_a_death_fails_the_peer(mpi):
    """The same death with the stock PMIx, which does not deliver ORTE's
    event in Open MPI 4.1.4 (its server reports BAD-PARAM): over drtcp the
    connection the dead process leaves broken fails its last path, and the
    peer with it, at once. MPI_Finalize's fence of the stock PMIx hangs now
    and then once a process of the job died (2 runs in 30 under ob1, the
    survivors waiting in ompi_mpi_finalize for the fence), so this run skips
    it (async_mpi_finalize, an Open MPI parameter)."""
    result = mpi.run("dead_peer", np=3, mca=dr("self,drtcp", async_mpi_finalize=1),
                     args=["kill", 20], mpirun_args=["--enable-recovery"])
    result.check()
    dead_peer_checks(result, (0, 2))
    assert first_error_seconds(result) < 5, result


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["vader", "tcp"])
def test_a_rank_computing_outside_mpi_is_not_declared_dead(mpi, btl):
    """Master-worker: the worker computes for 2 s after receiving its work,
    acknowledging nothing (the second part, sent 0.5 s in, stays unacked for
    1.5 s), while the master waits for the result. ACK retries run out after
    0.3 s; the master must keep the worker (and its only path) and get the
    result."""
    mca = dr(f"self,{btl}", pml_dr_ack_timeout=50, pml_dr_ack_retries=2, pml_dr_stats=1)
    if btl == "vader":
        # At defaults the work goes as LOCAL_MATCH (trusted local paths), which
        # owes no ACK: nothing runs out. The full protocol over vader is what
        # the rest checks.
        c = expect_ok(mpi.run("compute_phase", np=2, mca=mca, args=[2]), "compute_phase ok")
        assert c.get("paths_lost", 0) == 0 and c.get("abandoned", 0) == 0, c
        mca["pml_dr_trust_local"] = 0
    c = expect_ok(mpi.run("compute_phase", np=2, mca=mca, args=[2]), "compute_phase ok")
    assert c.get("silent_expiries", 0) > 0, c  # the retries did run out meanwhile
    assert c.get("paths_lost", 0) == 0 and c.get("abandoned", 0) == 0, c


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("btl", ["self,tcp", "self,drtcp", "self,vader"])
def test_quiet_peers_rest_and_wake_where_they_left_off(mpi, btl):
    """Ranks 0 and 1 exchange, then both sit in MPI with nothing between them
    for 1.3 s, longer than the channel's idle period: each puts the other to
    rest (its state shrinks to a rest record), and the next round's messages
    wake it and carry on both sequences, intact, nothing resent. Over vader
    at defaults the ranks' messages take trusted local paths, which keep no
    channel state; the full protocol is what this checks there."""
    mca = dr(btl, pml_dr_stats=1)
    if btl == "self,vader":
        mca["pml_dr_trust_local"] = 0
    c = expect_ok(mpi.run("rest_wake", np=3, mca=mca), "rest_wake ok")
    assert c.get("rests", 0) >= 4 and c.get("wakes", 0) >= 4, c
    assert c.get("abandoned", 0) == 0 and c.get("paths_lost", 0) == 0, c


@pytest.mark.mpi_timeout(120)
def test_counters_are_mpi_t_pvars(mpi):
    """Per-peer counters bound to a communicator (one value per rank), and the
    process-wide checksum counter, read through MPI_T while faults are injected."""
    names = ["pml_dr_frames_sent", "pml_dr_frames_received", "pml_dr_retransmits",
             "pml_dr_checksum_errors"]
    faults = dict(FAULTS, pml_dr_fault_corrupt=0.05, pml_dr_stats=0)
    result = mpi.run("pvars", np=3, mca=dr("self,vader", **faults), args=names)
    result.check()
    assert "pvars ok" in result.stdout, result
    values: dict[str, list[list[int]]] = {}
    for name, vals in re.findall(r"pvar (\S+) rank \d+: ([\d ]+)", result.stdout):
        values.setdefault(name, []).append([int(v) for v in vals.split()])
    assert sorted(values) == sorted(names), result
    for name in names[:3]:
        assert all(len(v) == 3 for v in values[name]), values[name]
    # Every rank sent to and received from its two ring neighbours.
    assert all(v.count(0) <= 1 for v in values["pml_dr_frames_sent"]), values
    assert sum(map(sum, values["pml_dr_retransmits"])) > 0, values
    assert sum(map(sum, values["pml_dr_checksum_errors"])) > 0, values


@pytest.mark.mpi_timeout(60)
def test_parameters_and_pvars_listed_with_help(mpi):
    """Every reliability parameter and counter is visible in ompi_info, with help text."""
    result = mpi.run_tool(["ompi_info", "--param", "pml", "dr", "--level", "9", "--parsable"])
    result.check()
    text = result.stdout
    for name in ["csum", "ack_timeout", "ack_retries", "watchdog_timeout", "watchdog_retries",
                 "peer_dead_timeout", "window", "unexpected_limit", "stats", "fault_drop",
                 "fault_corrupt", "fault_dup", "fault_seed", "fault_fail_btl",
                 "fault_fail_after"]:
        help_line = re.search(rf"mca:pml:dr:param:pml_dr_{name}:help:(.+)", text)
        assert help_line and help_line.group(1).strip(), f"pml_dr_{name} without help:\n{text}"
    for name in ["frames_sent", "retransmits", "duplicates_dropped", "failovers", "paths_lost",
                 "checksum_errors"]:
        assert f"pml_dr_{name}" in text, f"pvar pml_dr_{name} missing:\n{text}"


@pytest.mark.mpi_timeout(60)
def test_self_sends_are_exempt_from_fault_injection(mpi):
    """Frames a process sends itself never cross a network: even with every
    arriving frame dropped, a single-rank job talking to itself completes."""
    result = mpi.run("ring", np=1, mca=dr("self", pml_dr_fault_drop=0.999, pml_dr_ack_timeout=20,
                                          pml_dr_ack_retries=1))
    result.check()
    assert "ring ok" in result.stdout, result
