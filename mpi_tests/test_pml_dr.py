"""The dr PML carries real MPI traffic: ring, demo and mpi4py over several BTL sets.

`--mca pml dr` makes dr the only candidate, so a run that passes used it.
"""

from __future__ import annotations

import pytest

BTL_SETS = {
    "self,vader": {"btl": "self,vader"},
    "self,tcp": {"btl": "self,tcp", "btl_tcp_if_include": "lo"},
    "self,vader,tcp": {"btl": "self,vader,tcp", "btl_tcp_if_include": "lo"},
}


@pytest.fixture
def dr(components):
    if not any(c.framework == "pml" and c.name == "dr" for c in components):
        pytest.fail("mca_pml_dr.so was not built/staged")
    return {"pml": "dr"}


@pytest.mark.parametrize("btl", BTL_SETS.values(), ids=BTL_SETS.keys())
@pytest.mark.parametrize("np,laps,token", [(2, 50, 8), (4, 10, 300_000)],
                         ids=["np2-small", "np4-large"])
def test_ring(mpi, dr, btl, np, laps, token):
    result = mpi.run("ring", np=np, mca={**dr, **btl}, args=[laps, token])
    result.check()
    assert result.stdout == f"ring ok {np} {laps}\n", result


@pytest.mark.mpi_timeout(180)
@pytest.mark.parametrize("btl", BTL_SETS.values(), ids=BTL_SETS.keys())
def test_demo(mpi, dr, btl):
    result = mpi.run("demo", np=3, mca={**dr, **btl}, args=[1 << 20, 2])
    result.check()
    assert "demo ok: " in result.stdout.splitlines()[-1], result


def test_mpi4py(mpi, dr):
    pytest.importorskip("mpi4py")
    result = mpi.run_python("hello_mpi4py.py", np=3, mca={**dr, "btl": "self,vader"})
    result.check()
    assert result.stdout == "mpi4py ok 3 6\n", result
