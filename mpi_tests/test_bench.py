"""scripts/bench: one --quick run exercises every benchmark under every configuration.

Checks that the run completes and writes what it promises (CSV rows for every
benchmark and configuration, the Markdown ratio tables, machine.md, the plots).
It never passes or fails on speed. The parsers are checked on fixed text.
"""

from __future__ import annotations

import csv
import importlib.machinery
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import harness

BENCH_SCRIPT = harness.REPO / "scripts" / "bench"


def _load_bench() -> ModuleType:
    """scripts/bench as a module (it has no .py suffix), for its tables and parsers."""
    loader = importlib.machinery.SourceFileLoader("dr_bench_script", str(BENCH_SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module


bench = _load_bench()


def _can_plot() -> bool:
    """What scripts/bench's plot() finds: matplotlib here or in the system python3."""
    if importlib.util.find_spec("matplotlib") is not None:
        return True
    system = Path("/usr/bin/python3")
    return system.is_file() and subprocess.run(
        [str(system), "-c", "import matplotlib"], capture_output=True).returncode == 0


# ------------------------------------------------------------- parsers


def test_parse_lines_reads_the_requested_metrics() -> None:
    text = ("warming up\n"
            "size=0 lat_us=0.450 bw_MBps=0.00\n"
            "size=4096 lat_us=2.500 bw_MBps=1638.40 window=16\n")
    assert bench.parse_lines(text, ["lat_us"]) == {0: {"lat_us": 0.45}, 4096: {"lat_us": 2.5}}


def test_parse_netpipe_converts_units() -> None:
    # NPmpi -o: bytes, Mbps (10^6 bit/s), seconds for half a round trip
    text = "       1 17.977528   0.00000042\n   65536 19293.914163   0.00002591\n"
    got = bench.parse_netpipe(text)
    assert set(got) == {1, 65536}
    assert got[65536]["bw_MBps"] == pytest.approx(19293.914163 / 8)
    assert got[1]["lat_us"] == pytest.approx(0.42)


def test_parse_csum_splits_operations() -> None:
    text = "size=64 memcpy_MBps=100.0 crc32c_MBps=50.5 memcpy+crc32c_MBps=40.0 hw=1\n"
    assert bench.parse_csum(text) == {"memcpy": {64: {"MBps": 100.0}},
                                      "crc32c": {64: {"MBps": 50.5}},
                                      "memcpy+crc32c": {64: {"MBps": 40.0}}}


def test_every_baseline_is_a_configuration() -> None:
    names = {c.name for c in bench.CONFIGS}
    assert len(names) == len(bench.CONFIGS)
    assert all(c.baseline in names for c in bench.CONFIGS)


def test_padded_ob1_carries_the_header_bytes_dr_adds() -> None:
    assert bench.DR_EXTRA_HEADER == bench._dr_match_header() - bench.OB1_MATCH_HEADER > 0
    for c in bench.CONFIGS:
        if c.pad:
            assert c.name.endswith("+drhdr") and c.pad == bench.DR_EXTRA_HEADER, c.name
            assert c.mca == bench.CONFIG_BY_NAME[c.baseline].mca, c.name
            assert c.benches == ("pingpong",), c.name  # the one program that takes -p


def test_kernel_tcp_loss_row_differs_from_its_baseline_only_in_the_loss() -> None:
    lossy = bench.CONFIG_BY_NAME["ob1+tcp-netns+1%loss"]
    clean = bench.CONFIG_BY_NAME[lossy.baseline]
    assert (clean.name, clean.baseline) == ("ob1+tcp-netns", "ob1+tcp-netns")
    assert lossy.netns and clean.netns and (lossy.loss, clean.loss) == (10, 0)
    assert lossy.mca == clean.mca and clean.mca["pml"] == "ob1"


def test_header_share_table_splits_dr_ratio_in_two_factors() -> None:
    def row(config: str, size: int, median: float):
        return bench.Row("pingpong", config, size, "lat_us", median, None, "", 1, median, median)

    rows = [row("ob1+vader", 8, 0.25), row("ob1+vader+drhdr", 8, 0.30), row("dr+vader", 8, 0.33),
            row("ob1+vader", 64, 0.40), row("ob1+vader+drhdr", 64, 0.40),
            row("dr+vader", 64, 0.50)]
    table = bench.header_share_table(rows, "pingpong", "lat_us",
                                     ["ob1+vader", "ob1+vader+drhdr", "dr+vader"])
    lines = table.splitlines()
    assert lines[0] == "| configuration | factor | 8 | 64 |"
    assert lines[2] == "| dr+vader | header size: ob1+vader+drhdr / ob1+vader | 1.20 | 1.00 |"
    assert lines[3] == "| dr+vader | processing: dr+vader / ob1+vader+drhdr | 1.10 | 1.25 |"
    # without the padded run there is nothing to split
    unpadded = [r for r in rows if r.config != "ob1+vader+drhdr"]
    assert bench.header_share_table(unpadded, "pingpong", "lat_us",
                                    ["ob1+vader", "ob1+vader+drhdr", "dr+vader"]) == ""


def test_every_benchmark_program_exists() -> None:
    for b in bench.BENCHES.values():
        if b.kind == "mpi":
            assert (bench.BENCH_DIR / b.source).is_file(), b.name


# ------------------------------------------------------------- a quick run


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    if os.environ.get("DR_PRELOAD"):
        pytest.skip("benchmarks under sanitizers measure the sanitizer; the plain run covers it")
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, str(BENCH_SCRIPT), "--quick", "--out", str(out)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300 * harness.timeout_scale())
    return proc, out


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def _skipped_configs(out: Path) -> set[str]:
    """Configurations results.md reports as skipped (components not built here)."""
    text = (out / "results.md").read_text()
    section = text.split("## Configurations", 1)[1]
    return {line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| ") and "| skipped" in line}


def test_quick_run_completes(quick) -> None:
    proc, out = quick
    assert proc.returncode == 0, f"scripts/bench --quick failed:\n{proc.stderr[-6000:]}"
    for name in ("results.csv", "results.md", "machine.md", "commands.txt"):
        assert (out / name).is_file(), name


def test_csv_has_every_benchmark_and_configuration(quick) -> None:
    proc, out = quick
    rows = _rows(out)
    assert rows, proc.stderr[-3000:]
    assert list(rows[0]) == bench.CSV_HEADER
    skipped = _skipped_configs(out)
    seen = {(r["bench"], r["config"]) for r in rows}
    for b in bench.BENCHES.values():
        if b.kind == "csum":
            for op in bench.CSUM_OPS:
                assert (b.name, op) in seen, f"csum {op} missing"
            continue
        if b.kind == "netpipe" and bench.netpipe_binary() is None:
            continue
        for c in bench.CONFIGS:
            if c.name in skipped:
                continue
            if not c.runs_in(b.name):
                assert (b.name, c.name) not in seen, f"{c.name} ran {b.name}"
                continue
            assert (b.name, c.name) in seen, f"{b.name} under {c.name} missing"
    # the stock baselines are always available, so something was compared
    assert {"ob1+vader", "ob1+tcp"} <= {c for (_, c) in seen}


def test_csv_values_and_ratios_are_consistent(quick) -> None:
    _, out = quick
    medians = {}
    for r in _rows(out):
        value = float(r["median"])
        assert math.isfinite(value) and value >= 0, r
        assert float(r["min"]) <= value <= float(r["max"]), r
        medians[(r["bench"], r["config"], r["size"], r["metric"])] = (value, r)
    for (b, config, size, metric), (value, r) in medians.items():
        base = medians.get((b, r["baseline"], size, metric))
        if not r["ratio"]:
            continue
        assert base is not None and base[0] > 0, r
        assert float(r["ratio"]) == pytest.approx(value / base[0], rel=1e-3), r
        if config == r["baseline"]:
            assert float(r["ratio"]) == 1.0


def test_markdown_has_a_table_per_benchmark_and_every_configuration(quick) -> None:
    _, out = quick
    text = (out / "results.md").read_text()
    for b in bench.BENCHES.values():
        if b.kind == "netpipe" and bench.netpipe_binary() is None:
            continue
        assert f"## {b.name}: {b.metrics[0]}" in text, b.name
    for c in bench.CONFIGS:
        assert f"| {c.name} |" in text, c.name
    assert "| dr+vader | header size: ob1+vader+drhdr / ob1+vader |" in text
    assert "| dr+tcp | processing: dr+tcp / ob1+tcp+drhdr |" in text


def test_machine_notes_name_the_cpu_and_versions(quick) -> None:
    _, out = quick
    text = (out / "machine.md").read_text()
    assert bench.cpu_model() in text
    assert f"Open MPI: {bench.ompi_version()}" in text
    assert "UCX: " in text and "cores" in text


def test_plots_are_written(quick) -> None:
    proc, out = quick
    if not _can_plot():
        assert "matplotlib is not installed" in proc.stderr
        pytest.skip("python3-matplotlib is not installed")
    for b in bench.BENCHES.values():
        if b.kind == "netpipe" and bench.netpipe_binary() is None:
            continue
        for metric in b.plots:
            png = out / f"{b.name}_{metric}.png"
            assert png.is_file(), f"{png.name} missing:\n{proc.stderr[-2000:]}"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png.name


# ------------------------------------------------------------- scripts/bench-heap


def test_bench_heap_prints_a_row_per_configuration() -> None:
    """scripts/bench-heap on 4 ranks, once: ob1, dr and dr with trust off each
    get a row with their heap figures, and dr's are compared with ob1's."""
    if os.environ.get("DR_PRELOAD"):
        pytest.skip("heap figures under sanitizers measure the sanitizer")
    proc = subprocess.run([str(harness.REPO / "scripts" / "bench-heap"), "--np", "4", "--reps", "1"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300 * harness.timeout_scale())
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = {line.split("|")[1].strip(): line for line in proc.stdout.splitlines()
            if line.startswith("| ") and " KB |" in line}
    assert set(rows) == {"ob1", "dr", "dr-trust"}, proc.stdout
    for name in ("dr", "dr-trust"):
        assert " B | " in rows[name] and rows[name].rstrip().endswith("B |"), rows[name]
