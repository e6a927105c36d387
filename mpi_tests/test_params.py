"""Bad MCA parameter values (issue 24, item 3).

Open MPI reads junk in a numeric parameter as 0, overflow as all ones, and
drops a component whose enum value it cannot read ("component not found",
plus help messages Debian's 4.1.4 cannot forward: ORTE_ERROR_LOG lines). Our
components register every parameter as a string and parse it themselves
(plugin/common/core/param_parse): a selected component with a bad value
prints one line naming the parameter and the value, and mpirun exits non-zero
at once.
"""

from __future__ import annotations

import pytest

import harness

PML = {"pml": "dr", "btl": "self,vader"}
DRTCP = {"pml": "dr", "btl": "self,drtcp"}
DRUCX = {"pml": "dr", "btl": "self,drucx"}
OOB = {"oob": "drtcp"}
PMIX = {"pmix": "dr"}

# Seconds a refused run may take: mpirun, two ranks, MPI_Init up to PML
# selection, teardown (about 2 s here). A hang is killed at the mpi_timeout.
BOUND = 15.0

# (selection, parameter, value, words the reason must contain)
BAD = [
    (PML, "pml_dr_fault_drop", "abc", "not a number"),
    (PML, "pml_dr_fault_drop", "1.0", "below 1"),
    (PML, "pml_dr_fault_corrupt", "-0.1", "at least 0"),
    (PML, "pml_dr_fault_dup", "nan", "finite"),
    (PML, "pml_dr_csum", "bogus", "auto, always, never"),
    (PML, "pml_dr_eager_limit", "-5", "negative"),
    (PML, "pml_dr_unexpected_limit", "99999999999999999999", "out of range"),
    (PML, "pml_dr_priority", "2147483648", "out of range"),
    (PML, "pml_dr_window", "", "empty"),
    (PML, "pml_dr_ack_timeout", "10ms", "not an integer"),
    (PML, "pml_dr_stats", "maybe", "not a boolean"),
    (DRTCP, "btl_drtcp_connect_timeout", "abc", "not a number"),
    (DRTCP, "btl_drtcp_sndbuf", "99999999999999999999", "out of range"),
    (DRTCP, "btl_drtcp_fault_drop", "1", "below 1"),
    (DRUCX, "btl_drucx_max_pending", "-1", "negative"),
    (DRUCX, "btl_drucx_fault_corrupt", "0.5x", "not a number"),
    (OOB, "oob_drtcp_connect_timeout", "abc", "not a number"),
    (OOB, "oob_drtcp_max_msg_size", "-1", "negative"),
    (PMIX, "pmix_dr_max_msg_size", "abc", "not a number"),
    (PMIX, "pmix_dr_check_peer_uid", "maybe", "not a boolean"),
    (PMIX, "pmix_dr_get_timeout", "99999999999999999999", "out of range"),
]


def _output(result: harness.RunResult) -> str:
    return result.stdout + result.stderr


def assert_refused(result: harness.RunResult, name: str, value: str, *words: str) -> None:
    """Non-zero exit within BOUND, exactly one line naming the parameter and
    the value (with the reason), none of Open MPI's misleading follow-ups."""
    text = _output(result)
    assert not result.timed_out, f"hung with {name}={value!r}\n{result}"
    assert result.rc not in (0, None), f"accepted {name}={value!r}\n{result}"
    assert result.duration < BOUND * harness.timeout_scale(), result
    lines = [ln for ln in text.splitlines() if f"MCA parameter {name}" in ln]
    assert len(lines) == 1, f"want one message about {name}, got {lines}\n{result}"
    assert f'"{value}"' in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert "ORTE_ERROR_LOG" not in text, result
    assert "not found" not in text.lower(), result
    assert "cannot be selected" not in text, result


@pytest.mark.mpi_timeout(40)
@pytest.mark.parametrize("selection,name,value,reason", BAD,
                         ids=[f"{n}={v or 'empty'}" for _, n, v, _ in BAD])
def test_bad_value_is_one_clear_error(mpi, selection, name, value, reason):
    result = mpi.run("ring", np=2, mca={**selection, name: value})
    assert_refused(result, name, value, reason)


@pytest.mark.mpi_timeout(40)
def test_out_of_range_names_the_value_it_was_set_to(mpi):
    """A value that parses but the component's own check refuses: its message
    gets the value appended."""
    result = mpi.run("ring", np=2, mca={**PML, "pml_dr_eager_limit": "10"})
    assert_refused(result, "pml_dr_eager_limit", "10")
    assert "must be at least 1024" in _output(result), result


@pytest.mark.mpi_timeout(40)
def test_bad_value_from_a_parameter_file(mpi, tmp_path):
    """Values from an MCA parameter file go through the same parser."""
    conf = tmp_path / "params.conf"
    conf.write_text("pml_dr_fault_drop = abc\n")
    result = mpi.run("ring", np=2, mca=PML,
                     env={"OMPI_MCA_mca_base_param_files": str(conf)})
    assert_refused(result, "pml_dr_fault_drop", "abc", "not a number")


@pytest.mark.mpi_timeout(40)
def test_bad_value_on_one_rank_only(mpi):
    """A value only rank 1 sees: rank 0 goes on into MPI_Init and waits, rank
    1 (which defers its report a few seconds, so that a job-wide bad value is
    reported once, by rank 0) still reports it and the job ends."""
    ring = str(mpi.programs.get("ring"))
    script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export OMPI_MCA_pml_dr_window=abc; fi; '
              'exec "$0"')
    result = mpi.run(["sh", "-c", script, ring], np=2, mca=PML)
    assert_refused(result, "pml_dr_window", "abc", "not a number")


@pytest.mark.mpi_timeout(60)
def test_good_values_in_every_spelling_run(mpi):
    """Suffixes, hex, any-case enum names and boolean words are accepted."""
    result = mpi.run("ring", np=2, mca={
        **PML, "pml_dr_eager_limit": "64k", "pml_dr_csum": "ALWAYS",
        "pml_dr_stats": "no", "pml_dr_window": "0x100", "pml_dr_fault_drop": " 0 ",
        "pml_dr_ack_delay": "+200"})
    result.check()
    assert "ring ok" in result.stdout, result


def test_ompi_info_still_lists_a_component_with_a_bad_value(mpi):
    """A bad value only matters when the component is selected: ompi_info
    still loads it and shows what was set."""
    result = mpi.run_tool(["ompi_info", "--parsable", "--param", "pml", "dr", "--level", "9"],
                          env={"OMPI_MCA_pml_dr_csum": "bogus"}, timeout=60)
    result.check("ompi_info")
    assert "mca:pml:dr:param:pml_dr_csum:value:bogus" in result.stdout, result
    assert "mca:pml:dr:param:pml_dr_eager_limit:value:131072" in result.stdout, result
