"""pytest fixtures for the MPI tests: staged components, compiled programs, mpirun.

Fixtures
    ompi         OmpiInstall: stock pkglibdir and libdir (from ompi_info)
    components   list[Component] staged from the meson build (or DR_COMPONENT_DIR)
    component    parametrizes a test over every staged component
    programs     ProgramCache: mpicc-compiled mpi_tests/programs/*.c
    mpi          MpiRunner with our components on the component path
    stock_mpi    MpiRunner that never adds our components
    fake_hosts   fake_hosts(n, chain=False) -> mpirun arguments that start n
                 local ORTE daemons as if on remote hosts (harness.FAKE_RSH)

Marker
    @pytest.mark.mpi_timeout(seconds)  hard timeout per mpirun in the test
                                      (default 60 s, times DR_TIMEOUT_SCALE)

When a test fails, every command it ran is appended to the report as a
ready-to-paste shell line (including OMPI_MCA_mca_base_component_path); the
staged components are then kept (always with DR_KEEP_STAGE=1).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import harness

_RUNS = pytest.StashKey[list]()


class _Staging:
    """Stages the components once per session, on first use."""

    def __init__(self) -> None:
        self.components: list[harness.Component] | None = None
        self.error: str | None = None
        self.tmp: Path | None = None
        self.source = ""

    def get(self) -> list[harness.Component]:
        if self.components is None:
            try:
                self.components = self._stage()
            except harness.HarnessError as exc:
                self.error = str(exc)
                self.components = []
        return self.components

    def _stage(self) -> list[harness.Component]:
        given = os.environ.get("DR_COMPONENT_DIR")
        if given:
            path = Path(given).resolve()
            if not path.is_dir():
                raise harness.HarnessError(f"DR_COMPONENT_DIR={given} is not a directory")
            self.source = f"DR_COMPONENT_DIR={path}"
            return harness.find_components(path)
        build = harness.default_build_dir()
        self.tmp = Path(tempfile.mkdtemp(prefix="dr-stage-"))
        self.source = f"staged from {build} into {self.tmp}"
        return harness.stage_components(build, self.tmp)


_staging = _Staging()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "mpi_timeout(seconds): hard timeout for each mpirun in the test")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Keep the staged components when something failed: the reproduce lines
    # in the report point into that directory.
    if _staging.tmp is None:
        return
    if session.testsfailed or os.environ.get("DR_KEEP_STAGE"):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"staged components kept in {_staging.tmp} "
                                f"(for the commands in the failure reports)")
    else:
        shutil.rmtree(_staging.tmp, ignore_errors=True)


def pytest_report_header(config: pytest.Config) -> list[str]:
    comps = _staging.get()
    lines = [f"components: {_staging.source or 'none'}"]
    if _staging.error:
        lines.append(f"components: STAGING FAILED: {_staging.error.splitlines()[0]}")
    lines.append("components: " + (", ".join(c.id for c in comps) or "(none found)"))
    if os.environ.get("DR_PRELOAD"):
        lines.append(f"preload: {os.environ['DR_PRELOAD']}")
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "component" in metafunc.fixturenames:
        comps = _staging.get()
        metafunc.parametrize("component", comps, ids=[c.id for c in comps])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    runs = [r for history in item.stash.get(_RUNS, []) for r in history]
    if report.failed and runs:
        report.sections.append(
            ("commands run (reproduce with these)", "\n".join(r.summary() for r in runs)))


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def ompi() -> harness.OmpiInstall:
    try:
        return harness.OmpiInstall.detect()
    except harness.HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def components() -> list[harness.Component]:
    comps = _staging.get()
    if _staging.error:
        pytest.fail(_staging.error, pytrace=False)
    return comps


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> harness.ProgramCache:
    return harness.ProgramCache(tmp_path_factory.mktemp("programs"))


def _runner(request: pytest.FixtureRequest, ompi: harness.OmpiInstall,
            comps: list[harness.Component],
            programs: harness.ProgramCache) -> harness.MpiRunner:
    marker = request.node.get_closest_marker("mpi_timeout")
    timeout = float(marker.args[0]) if marker else harness.DEFAULT_TIMEOUT
    runner = harness.MpiRunner(ompi, comps, programs, default_timeout=timeout)
    request.node.stash.setdefault(_RUNS, []).append(runner.history)
    return runner


@pytest.fixture
def mpi(request, ompi, components, programs) -> harness.MpiRunner:
    return _runner(request, ompi, components, programs)


@pytest.fixture
def stock_mpi(request, ompi, programs) -> harness.MpiRunner:
    return _runner(request, ompi, [], programs)


@pytest.fixture
def fake_hosts(tmp_path):
    """mpirun arguments that start `n` local daemons as if on remote hosts."""
    agent = harness.write_fake_rsh(tmp_path)

    def args(n: int, chain: bool = False) -> list[str]:
        return harness.fake_host_args(agent, n, chain)
    return args
