"""Our components load into the stock Open MPI and change nothing unless named.

a) ompi_info sees every staged component and at least one of its parameters.
b) every staged .so dlopen()s with RTLD_NOW next to the Open MPI libraries and
   exports nothing but its component symbol.
c) a run that names none of our components behaves exactly as without them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import harness

# Interface versions of the host runtime (DESIGN.md section 2).
MCA_BASE_VERSION = "2.1.0"
API_VERSIONS = {"pml": "2.0.0", "btl": "3.1.0", "oob": "2.0.0", "pmix": "2.0.0"}

# Which Open MPI libraries a framework's process can be assumed to have
# loaded: pml runs inside MPI processes only; oob and pmix also run inside
# mpirun/orted, which do not link libmpi; btl belongs to the opal layer.
LAYER_LIBS = {"pml": ("open-pal", "open-rte", "mpi")}
NON_MPI_LIBS = ("open-pal", "open-rte")

# Symbols the toolchain may define in any shared object.
ALLOWED_EXTRA_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def test_components_staged(components):
    """The build produced components (or DR_ALLOW_NO_COMPONENTS=1 says none are expected)."""
    if not components and os.environ.get("DR_ALLOW_NO_COMPONENTS") != "1":
        pytest.fail("no mca_*.so found in the staged install; did the build produce the "
                    "components? (set DR_ALLOW_NO_COMPONENTS=1 to accept an empty set)")
    names = [c.path.name for c in components]
    assert len(names) == len(set(names)), f"component installed twice: {names}"


# ------------------------------------------------------------------- a) ompi_info


@pytest.fixture(scope="module")
def ompi_info_all(ompi, components, programs):
    runner = harness.MpiRunner(ompi, components, programs)
    result = runner.run_tool(["ompi_info", "--parsable", "--all"], timeout=120)
    return result


def test_ompi_info_lists_component(component, ompi_info_all):
    result = ompi_info_all
    result.check("ompi_info --parsable --all")
    assert not harness.load_errors(result.stdout + result.stderr), result
    fw, name = component.framework, component.name
    lines = result.stdout.splitlines()

    versions = [ln for ln in lines if ln.startswith(f"mca:{fw}:{name}:version:")]
    assert versions, (f"ompi_info does not list {component.id} "
                      f"(no mca:{fw}:{name}:version: line)\n{result.summary()}")
    assert f'mca:{fw}:{name}:version:"mca:{MCA_BASE_VERSION}"' in versions, versions
    if fw in API_VERSIONS:
        assert f'mca:{fw}:{name}:version:"api:{API_VERSIONS[fw]}"' in versions, versions

    param_prefix = f"mca:{fw}:{name}:param:{component.param_prefix}"
    params = {ln[len(param_prefix):].split(":", 1)[0]
              for ln in lines if ln.startswith(param_prefix)}
    assert params, (f"{component.id} registers no parameter named "
                    f"{component.param_prefix}*\n{result.summary()}")


# ------------------------------------------------------------------- b) dlopen

_DLOPEN_SCRIPT = r"""
import ctypes, os, sys
*libs, plugin, symbol = sys.argv[1:]
for lib in libs:
    ctypes.CDLL(lib, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
handle = ctypes.CDLL(plugin, mode=os.RTLD_NOW | os.RTLD_LOCAL)
getattr(handle, symbol)
print("loaded", plugin)
"""


def _dlopen(mpi, ompi, component, lib_stems):
    libs = [str(ompi.library(stem)) for stem in lib_stems]
    return mpi.run_tool([sys.executable, "-c", _DLOPEN_SCRIPT, *libs, str(component.path),
                         component.symbol])


def test_dlopen_rtld_now(component, mpi, ompi):
    """Every symbol resolves against libmpi/libopen-rte/libopen-pal (no lazy surprises)."""
    result = _dlopen(mpi, ompi, component, ("open-pal", "open-rte", "mpi"))
    result.check(f"dlopen(RTLD_NOW) of {component.path.name}")


def test_layering(component, mpi, ompi):
    """oob/pmix run inside mpirun/orted and btl in the opal layer: no libmpi there."""
    if component.framework in LAYER_LIBS:
        pytest.skip(f"{component.framework} components run only in MPI processes")
    needed = subprocess.run(["readelf", "-d", str(component.path)], capture_output=True,
                            text=True, check=True).stdout
    needed_libs = [ln.split("[", 1)[1].rstrip("]") for ln in needed.splitlines()
                   if "(NEEDED)" in ln]
    assert not [lib for lib in needed_libs if lib.startswith("libmpi.")], needed_libs
    _dlopen(mpi, ompi, component, NON_MPI_LIBS).check(
        f"dlopen(RTLD_NOW) of {component.path.name} without libmpi")


def test_exports_only_component_symbol(component):
    out = subprocess.run(["nm", "-D", "--defined-only", str(component.path)],
                         capture_output=True, text=True, check=True).stdout
    exported = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[-2] == "A":  # 'A': version-node names
            continue
        exported.add(fields[-1].split("@", 1)[0])
    assert component.symbol in exported, f"{component.symbol} not exported:\n{out}"
    extra = sorted(exported - {component.symbol} - ALLOWED_EXTRA_SYMBOLS)
    assert not extra, f"{component.path.name} exports more than {component.symbol}: {extra}"


# ------------------------------------------------------- c) stock runs unchanged

# BTL selections of a run that names none of our components. The tcp case is
# pinned to loopback so it also works on hosts with no other interface.
STOCK_CONFIGS = {
    "btl=self,vader": {"btl": "self,vader"},
    "btl=self,tcp": {"btl": "self,tcp", "btl_tcp_if_include": "lo"},
    "btl=default": {},
}
RING_NP = 4
RING_ARGS = ["20", "65536"]  # laps, token bytes (crosses ob1's eager limit)


@pytest.mark.parametrize("config", STOCK_CONFIGS.values(), ids=STOCK_CONFIGS.keys())
def test_stock_run_unchanged(mpi, config):
    stock = mpi.run("ring", np=RING_NP, mca=config, args=RING_ARGS, use_our_components=False)
    stock.check("stock run (stock component path)")
    assert stock.stdout == f"ring ok {RING_NP} {RING_ARGS[0]}\n", stock
    assert stock.stderr == "", stock
    ours = mpi.run("ring", np=RING_NP, mca=config, args=RING_ARGS, use_our_components=True)
    assert (ours.rc, ours.stdout, ours.stderr) == (stock.rc, stock.stdout, stock.stderr), (
        f"installing our components changed a stock run\n"
        f"== without ours ==\n{stock}\n== with ours ==\n{ours}")


@pytest.mark.parametrize("config", STOCK_CONFIGS.values(), ids=STOCK_CONFIGS.keys())
def test_stock_selection_unchanged(mpi, components, config):
    mca = {**config, **harness.SELECTION_VERBOSE_MCA}
    stock = mpi.run("ring", np=RING_NP, mca=mca, args=RING_ARGS, use_our_components=False)
    stock.check("stock run (stock component path)")
    ours = mpi.run("ring", np=RING_NP, mca=mca, args=RING_ARGS, use_our_components=True)
    ours.check("stock run (our components on the path)")
    before = harness.selections(stock.stdout + stock.stderr)
    after = harness.selections(ours.stdout + ours.stderr)

    # the log format is what we think it is: these must be present
    assert before["pml"] == {("ob1",): RING_NP}, before
    assert before["pmix"], before
    assert before["bml"], before
    assert after["pml"] == before["pml"], "PML selection changed"
    assert after["pmix"] == before["pmix"], "PMIx selection changed"
    assert after["bml"] == before["bml"], "BTLs used between ranks changed"
    # Our BTLs may initialize when the BTL list is the default; the stock ones
    # must still initialize exactly as before.
    ours_names = {c.name for c in components if c.framework == "btl"}
    stock_inits = {k: v for k, v in after["btl_init"].items() if k[0] not in ours_names}
    assert stock_inits == before["btl_init"], "stock BTL initialization changed"
    if "btl" in config:
        assert after["btl_init"] == before["btl_init"], "a BTL that was not named initialized"
    assert not harness.load_errors(ours.stdout + ours.stderr), ours
