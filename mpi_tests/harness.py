"""Helpers that drive the system's Open MPI with the project's MCA components.

Used by conftest.py (fixtures) and usable on its own, e.g. from a REPL:

    import harness
    comps = harness.stage_components(harness.default_build_dir(), "/tmp/stage")
    runner = harness.MpiRunner(harness.OmpiInstall.detect(), comps,
                               harness.ProgramCache("/tmp/progs"))
    print(runner.run("ring", np=4, mca={"pml": "dr"}))

Environment knobs (all optional):
    DR_BUILD_DIR       meson build dir to stage components from (default <repo>/build)
    DR_COMPONENT_DIR   use the mca_*.so already in this dir instead of staging
    DR_TIMEOUT_SCALE   multiply every timeout (e.g. 4 under sanitizers)
    DR_PRELOAD         LD_PRELOAD for every child process (sanitizer runtimes)
    DR_MPIRUN_ARGS     extra mpirun arguments, shell-quoted
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Mapping, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PROGRAMS = HERE / "programs"

DEFAULT_TIMEOUT = 60.0
# Grace period between SIGTERM and SIGKILL when a run times out: long enough
# for mpirun to tear its daemons and ranks down itself.
KILL_GRACE = 5.0

# MCA settings every mpirun gets unless the caller overrides them (value None
# removes one). Debian's 4.1.4 loses aggregated help messages ("ORTE_ERROR_LOG:
# Out of resource in file ../../../orte/util/show_help.c") - without this a
# failing run explains nothing.
DEFAULT_MCA: dict[str, str] = {"orte_base_help_aggregate": "0"}

COMPONENT_PATH_VAR = "OMPI_MCA_mca_base_component_path"


class HarnessError(RuntimeError):
    """The harness could not set up what a test needs (not a test failure)."""


def timeout_scale() -> float:
    try:
        return max(float(os.environ.get("DR_TIMEOUT_SCALE", "1")), 0.1)
    except ValueError as exc:
        raise HarnessError(f"DR_TIMEOUT_SCALE is not a number: {exc}") from exc


def default_build_dir() -> Path:
    return Path(os.environ.get("DR_BUILD_DIR", REPO / "build")).resolve()


# --------------------------------------------------------------------- Open MPI


def ompi_info_path(kind: str) -> Path:
    """`ompi_info --path <kind> --parsable` -> Path (kind: pkglibdir, libdir, ...)."""
    try:
        out = subprocess.run(
            ["ompi_info", "--path", kind, "--parsable"],
            capture_output=True, text=True, timeout=60, check=True,
            env=_clean_env(),
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarnessError(f"ompi_info --path {kind} failed: {exc}") from exc
    prefix = f"path:{kind}:"
    for line in out.splitlines():
        if line.startswith(prefix):
            return Path(line[len(prefix):].strip())
    raise HarnessError(f"ompi_info --path {kind} printed no '{prefix}' line:\n{out}")


@dataclasses.dataclass(frozen=True)
class OmpiInstall:
    pkglibdir: Path  # the stock components
    libdir: Path     # libmpi, libopen-rte, libopen-pal

    @classmethod
    def detect(cls) -> "OmpiInstall":
        return cls(ompi_info_path("pkglibdir"), ompi_info_path("libdir"))

    def library(self, stem: str) -> Path:
        """Path of lib<stem>.so (dev symlink or the shortest versioned name)."""
        candidates = sorted(self.libdir.glob(f"lib{stem}.so*"), key=lambda p: len(p.name))
        if not candidates:
            raise HarnessError(f"lib{stem}.so not found in {self.libdir}")
        return candidates[0]


# ------------------------------------------------------------------- components

_COMPONENT_FILE = re.compile(r"^mca_([a-z0-9]+)_([a-z0-9_]+)\.so$")


@dataclasses.dataclass(frozen=True)
class Component:
    framework: str
    name: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.framework}/{self.name}"

    @property
    def symbol(self) -> str:
        return f"mca_{self.framework}_{self.name}_component"

    @property
    def param_prefix(self) -> str:
        return f"{self.framework}_{self.name}_"


def parse_component_file(path: Path) -> Component | None:
    m = _COMPONENT_FILE.match(path.name)
    return Component(m.group(1), m.group(2), path) if m else None


def find_components(root: Path) -> list[Component]:
    found = (parse_component_file(p) for p in sorted(Path(root).rglob("mca_*.so")))
    return [c for c in found if c is not None and c.path.is_file()]


def stage_components(build_dir: Path, destdir: Path) -> list[Component]:
    """`meson install --destdir` the build into destdir; return the mca_*.so found."""
    build_dir = Path(build_dir)
    if not (build_dir / "build.ninja").is_file():
        raise HarnessError(
            f"{build_dir} is not a configured meson build dir; run scripts/setup "
            f"(or set DR_BUILD_DIR / DR_COMPONENT_DIR)")
    cmd = ["meson", "install", "-C", str(build_dir), "--destdir", str(destdir),
           "--no-rebuild", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise HarnessError(
            f"staging failed ({shlex.join(cmd)} -> rc {proc.returncode}); is the build "
            f"up to date? (meson compile -C {build_dir})\n{proc.stdout}{proc.stderr}")
    return find_components(Path(destdir))


def component_dirs(components: Iterable[Component]) -> list[Path]:
    dirs: list[Path] = []
    for c in components:
        if c.path.parent not in dirs:
            dirs.append(c.path.parent)
    return dirs


# --------------------------------------------------------------------- programs


class ProgramCache:
    """Compiles mpi_tests/programs/<name>.c with mpicc once per session."""

    FLAGS = ("-O2", "-Wall")

    def __init__(self, outdir: Path | str):
        self.outdir = Path(outdir)
        self.outdir.mkdir(parents=True, exist_ok=True)
        self._built: dict[tuple[str, tuple[str, ...]], Path] = {}

    def get(self, name: str, extra_flags: Sequence[str] = ()) -> Path:
        return self.get_path(PROGRAMS / f"{name}.c", extra_flags)

    def get_path(self, src: Path, extra_flags: Sequence[str] = ()) -> Path:
        """Compiles any MPI C source (e.g. mpi_tests/bench/*.c) once."""
        src = Path(src)
        name = src.stem
        key = (str(src), tuple(extra_flags))
        if key in self._built:
            return self._built[key]
        if not src.is_file():
            raise HarnessError(f"no such MPI program: {src}")
        out = self.outdir / (name if not extra_flags else f"{name}-{len(self._built)}")
        cmd = ["mpicc", *self.FLAGS, *extra_flags, str(src), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                              env=_clean_env())
        if proc.returncode != 0:
            raise HarnessError(f"{shlex.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
        self._built[key] = out
        return out


# ----------------------------------------------------------------- running jobs


@dataclasses.dataclass
class RunResult:
    argv: list[str]
    env_delta: dict[str, str]  # what the run set on top of the inherited env
    rc: int | None             # None: killed after timing out
    stdout: str
    stderr: str
    duration: float
    timeout: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    @property
    def command_line(self) -> str:
        """A shell command that reproduces the run."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env_delta.items()))
        return f"{env} {shlex.join(self.argv)}" if env else shlex.join(self.argv)

    def status(self) -> str:
        what = (f"TIMED OUT after {self.timeout:.0f} s (process group killed)"
                if self.timed_out else f"rc={self.rc}")
        return f"{what}, {self.duration:.1f} s"

    def summary(self) -> str:
        return f"$ {self.command_line}\n  -> {self.status()}"

    def __str__(self) -> str:
        return (f"{self.summary()}\n"
                f"--- stdout ---\n{_tail(self.stdout)}"
                f"--- stderr ---\n{_tail(self.stderr)}"
                f"--- end ---")

    def check(self, what: str = "run") -> "RunResult":
        """Raise AssertionError (with the command and output) unless rc == 0."""
        if not self.ok:
            raise AssertionError(f"{what} failed:\n{self}")
        return self


def _tail(text: str, lines: int = 150) -> str:
    if not text:
        return "(empty)\n"
    parts = text.splitlines()
    if len(parts) > lines:
        parts = [f"... ({len(parts) - lines} lines omitted) ..."] + parts[-lines:]
    return "\n".join(parts) + "\n"


def _clean_env() -> dict[str, str]:
    """The inherited environment minus settings that would redirect Open MPI."""
    env = dict(os.environ)
    env.pop(COMPONENT_PATH_VAR, None)
    return env


def _session_members(sid: int) -> list[int]:
    """PIDs whose session id is sid (mpirun and everything it forked that kept it)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        # fields: state ppid pgrp session ...
        if len(fields) > 3 and fields[3] == str(sid):
            pids.append(int(entry))
    return pids


def _signal_session(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    # ranks may have moved to their own process groups; the session still holds them
    for pid in _session_members(proc.pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def run_command(argv: Sequence[str], env_delta: Mapping[str, str] | None = None,
                timeout: float = DEFAULT_TIMEOUT, cwd: Path | str | None = None) -> RunResult:
    """Run argv in a new session with a hard timeout.

    On timeout everything in the session gets SIGTERM, then SIGKILL after
    KILL_GRACE seconds. Output goes to temporary files, not pipes, so a
    straggler holding them open cannot hang the harness.
    """
    import tempfile

    env = _clean_env()
    delta = dict(env_delta or {})
    env.update(delta)
    argv = [str(a) for a in argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise HarnessError(f"cannot start {shlex.join(argv)}: {exc}") from exc
        timed_out = False
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_session(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_GRACE)
            except subprocess.TimeoutExpired:
                pass
            _signal_session(proc, signal.SIGKILL)
            proc.wait()
            rc = None
        # reap stragglers of a run that ended normally but left orphans behind
        leftovers = _session_members(proc.pid)
        if leftovers:
            time.sleep(0.5)
            if _session_members(proc.pid):
                _signal_session(proc, signal.SIGKILL)
        duration = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return RunResult(argv, delta, rc, stdout, stderr, duration, timeout, timed_out)


class MpiRunner:
    """Runs MPI jobs with or without the project's components on the path."""

    def __init__(self, ompi: OmpiInstall, components: Sequence[Component],
                 programs: ProgramCache, default_timeout: float = DEFAULT_TIMEOUT,
                 component_dirs_: Sequence[Path] | None = None):
        self.ompi = ompi
        self.components = list(components)
        self.dirs = list(component_dirs_) if component_dirs_ is not None \
            else component_dirs(self.components)
        self.programs = programs
        self.default_timeout = default_timeout
        self.extra_mpirun_args = shlex.split(os.environ.get("DR_MPIRUN_ARGS", ""))
        self.preload = os.environ.get("DR_PRELOAD", "")
        self.history: list[RunResult] = []

    # -- environment
    def component_path(self, use_our_components: bool = True) -> str:
        """Value for OMPI_MCA_mca_base_component_path: it replaces the default
        path, so the stock directory always comes first. Without our components
        it is the stock directory alone, which also hides any copy installed in
        $HOME/.openmpi/components."""
        dirs = [self.ompi.pkglibdir] + (self.dirs if use_our_components else [])
        return ":".join(str(d) for d in dirs)

    def env_for(self, use_our_components: bool = True,
                env: Mapping[str, str] | None = None) -> dict[str, str]:
        delta = {COMPONENT_PATH_VAR: self.component_path(use_our_components)}
        if self.preload:
            old = os.environ.get("LD_PRELOAD", "")
            delta["LD_PRELOAD"] = f"{self.preload}:{old}" if old else self.preload
            # spelled out so the reproduce line carries them
            for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
                if var in os.environ:
                    delta[var] = os.environ[var]
        delta.update(env or {})
        return delta

    def _timeout(self, timeout: float | None) -> float:
        return (timeout if timeout is not None else self.default_timeout) * timeout_scale()

    # -- argv
    def program_argv(self, program: str | Path | Sequence[str]) -> list[str]:
        if isinstance(program, Path):
            return [str(program)]
        if isinstance(program, str):
            if "/" in program:
                return [program]
            return [str(self.programs.get(program))]
        return [str(p) for p in program]

    def mpirun_argv(self, np: int, mca: Mapping[str, object] | None = None,
                    mpirun_args: Sequence[str] = ()) -> list[str]:
        settings: dict[str, object] = dict(DEFAULT_MCA)
        settings.update(mca or {})
        argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]
        for key, value in settings.items():
            if value is not None:
                argv += ["--mca", key, str(value)]
        return argv + self.extra_mpirun_args + list(mpirun_args)

    # -- running
    def run(self, program: str | Path | Sequence[str], np: int = 2,
            mca: Mapping[str, object] | None = None, args: Sequence[object] = (),
            timeout: float | None = None, env: Mapping[str, str] | None = None,
            use_our_components: bool = True, mpirun_args: Sequence[str] = ()) -> RunResult:
        """mpirun -np <np> --mca k v ... <program> <args>; never raises on failure."""
        argv = self.mpirun_argv(np, mca, mpirun_args) + self.program_argv(program)
        argv += [str(a) for a in args]
        return self._record(run_command(argv, self.env_for(use_our_components, env),
                                        self._timeout(timeout)))

    def run_python(self, script: str | Path, np: int = 2, **kwargs) -> RunResult:
        """Run a Python script under mpirun with mpi4py (python3 -m mpi4py script)."""
        path = Path(script)
        if not path.is_absolute() and not path.exists():
            path = PROGRAMS / path
        if not path.is_file():
            raise HarnessError(f"no such Python MPI script: {path}")
        return self.run([sys.executable, "-m", "mpi4py", str(path)], np=np, **kwargs)

    def run_tool(self, argv: Sequence[str], use_our_components: bool = True,
                 env: Mapping[str, str] | None = None,
                 timeout: float | None = None) -> RunResult:
        """Run a non-MPI tool (ompi_info, python -c ...) with the same environment."""
        return self._record(run_command(list(argv), self.env_for(use_our_components, env),
                                        self._timeout(timeout)))

    def _record(self, result: RunResult) -> RunResult:
        self.history.append(result)
        return result


# --------------------------------------------------------- fake remote hosts

# A fake ssh: drops ssh-style options and the host, runs the command here,
# with a session directory of its own per host (they share one hostname, and
# ORTE's session directories are named after it: two daemons creating the
# same one at once fail).
FAKE_RSH = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -x|-X|-T|-t|-q|-n) shift;; -o|-p|-l) shift 2;; *) break;; esac; done
host=$1; shift
dir="${0%/*}/session-$host"; mkdir -p "$dir"
OMPI_MCA_orte_tmpdir_base="$dir" exec /bin/sh -c "$*"
"""


def write_fake_rsh(directory: Path | str) -> Path:
    """Writes the FAKE_RSH launch agent into directory; returns its path."""
    agent = Path(directory) / "fakersh"
    agent.write_text(FAKE_RSH)
    agent.chmod(0o755)
    return agent


def fake_host_args(agent: Path | str, n: int, chain: bool = False) -> list[str]:
    """mpirun arguments that start `n` ORTE daemons on this machine as if on
    the remote hosts 127.0.0.2 .. 127.0.0.(n+1), through the launch agent
    `agent` (write_fake_rsh). With chain, `routed_radix 1` makes the daemons
    relay for each other. Their MPI processes share this machine: vader
    between "hosts" breaks stock runs too, so such jobs use self,tcp."""
    hosts = ",".join(f"127.0.0.{k + 2}" for k in range(n))
    out = ["--mca", "plm_rsh_agent", str(agent), "-host", hosts]
    return out + (["--mca", "routed_radix", "1"] if chain else [])


# ------------------------------------------------------------ listening ports

def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port_block(count: int, rng: random.Random | None = None) -> int:
    """The first of `count` consecutive TCP ports, none bound now, all below
    the kernel's ephemeral range. A test that connects to a port before the
    job listens there must use such ports: on loopback, a connect to a free
    port inside the ephemeral range can get that very port as its source and
    connect to itself, and the job then finds its port taken."""
    rng = rng or random.Random()
    lo = 10000
    hi = _ephemeral_range()[0] - count
    for _ in range(200):
        base = rng.randrange(lo, hi)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("0.0.0.0", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise HarnessError(f"no {count} free consecutive ports in [{lo}, {hi + count})")


# ------------------------------------------------------------ output analysis

_SELECTION_PATTERNS = {
    # pml_base_verbose >= 10: "select: component ob1 selected"
    "pml": re.compile(r"select: component (\S+) selected"),
    # btl_base_verbose >= 10: "select: init of component vader returned success"
    "btl_init": re.compile(r"select: init of component (\S+) returned success"),
    # btl_base_verbose >= 1: "mca: bml: Using vader btl for send to [[123,1],2] on node vm"
    "bml": re.compile(r"mca: bml: Using (\S+) btl for send to \[\[\d+,\d+\],(\d+)\]"),
    # pmix_base_verbose >= 10: "mca:base:select:( pmix) Selected component [ext3x]"
    "pmix": re.compile(r"mca:base:select:\(\s*pmix\) Selected component \[(\S+)\]"),
}

SELECTION_VERBOSE_MCA = {
    "pml_base_verbose": 10,
    "btl_base_verbose": 10,
    "pmix_base_verbose": 10,
}


def selections(text: str) -> dict[str, dict[tuple[str, ...], int]]:
    """Count the component choices logged by a run with SELECTION_VERBOSE_MCA.

    Keys: pml, btl_init, bml ((btl, destination rank) pairs), pmix. Process
    ids and job ids are dropped so two runs can be compared.
    """
    result: dict[str, dict[tuple[str, ...], int]] = {k: {} for k in _SELECTION_PATTERNS}
    for line in text.splitlines():
        for key, pattern in _SELECTION_PATTERNS.items():
            m = pattern.search(line)
            if m:
                counts = result[key]
                counts[m.groups()] = counts.get(m.groups(), 0) + 1
    return result


def load_errors(text: str) -> list[str]:
    """Lines in which Open MPI reports a component that failed to load."""
    return [line for line in text.splitlines()
            if "mca_base_component_repository_open" in line
            or ("unable to open" in line and "mca_" in line)]
