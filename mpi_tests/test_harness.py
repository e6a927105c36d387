"""Self-tests of the harness and the test programs, on the stock Open MPI only.

They show that the programs check what they claim (a corrupted byte fails the
demo) and that a hung job is killed completely by the hard timeout.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

import harness


@pytest.mark.parametrize("np", [1, 3])
def test_ring_stock(stock_mpi, np):
    result = stock_mpi.run("ring", np=np, args=["5", "100000"])
    result.check()
    assert result.stdout == f"ring ok {np} 5\n", result


def test_demo_stock(stock_mpi):
    result = stock_mpi.run("demo", np=3, args=[str(1 << 20)])
    result.check()
    last = result.stdout.splitlines()[-1]
    assert last.startswith("demo ok: ") and last.endswith(" bytes verified"), result


def test_demo_detects_corruption(stock_mpi):
    result = stock_mpi.run("demo", np=2, args=["4096"], env={"DEMO_CORRUPT_SIZE": "1023"})
    assert result.rc not in (0, None), result
    assert "demo MISMATCH: ring rank 0 from 1 size 1023" in result.stderr, result
    assert "demo FAILED: 1 errors" in result.stdout, result


def test_mpi4py_stock(stock_mpi):
    pytest.importorskip("mpi4py")
    result = stock_mpi.run_python("hello_mpi4py.py", np=3)
    result.check()
    assert result.stdout == "mpi4py ok 3 6\n", result


def _processes_running(executable: Path) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/exe") == str(executable):
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


@pytest.mark.mpi_timeout(4)
def test_timeout_kills_whole_job(stock_mpi, programs):
    hang = programs.get("hang")
    result = stock_mpi.run(hang, np=2)
    assert result.timed_out and result.rc is None, result
    assert not result.ok
    assert result.duration < result.timeout + harness.KILL_GRACE + 10, result
    assert "TIMED OUT" in str(result)
    assert _processes_running(hang) == [], "ranks survived the timeout"


def test_command_line_reproduces_environment(stock_mpi):
    result = stock_mpi.run("ring", np=1, args=["1"], use_our_components=False)
    result.check()
    stock = str(stock_mpi.ompi.pkglibdir)
    assert result.env_delta[harness.COMPONENT_PATH_VAR] == stock
    # The variables come first (sorted; a sanitizer run adds LD_PRELOAD and
    # *SAN_OPTIONS), then the command itself.
    env_part, _, command = result.command_line.partition(" mpirun ")
    assert f"{harness.COMPONENT_PATH_VAR}={stock}" in env_part.split(), result.command_line
    assert command.startswith("--allow-run-as-root"), result.command_line


def test_free_port_block_is_free_and_below_the_ephemeral_range():
    lo, _ = harness._ephemeral_range()
    held = []
    try:
        for count in (1, 10, 16):
            base = harness.free_port_block(count)
            assert base + count <= lo, (base, count, lo)
            for port in range(base, base + count):  # every one can be listened on now
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(s)
                s.bind(("0.0.0.0", port))
    finally:
        for s in held:
            s.close()
