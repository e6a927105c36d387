"""Topology-aware path weights (issue 29) in real MPI jobs.

btl drtcp and btl drucx weigh each module by the NUMA distance from the
process to its network device, read from Open MPI's hwloc topology, and say
what they chose: one verbose line per module ("numa weights: <device>:
<locality>, <speed>: latency A -> B, bandwidth C -> D") and the read-only
btl_<name>_numa_weights_chosen variable. This machine has one NUMA node, so
the weights must come out exactly as configured; btl_<name>_numa_weights=0
turns the whole thing off. Near/far weights are unit-tested on hwloc XML
topologies (tests/topo); here a far NIC is staged by handing Open MPI such a
topology (hwloc_base_topo_file: tests/topo/far_eth0.xml puts this machine's
eth0 on the other socket's bus), and dr's scheduler is seen to give it the
smaller share of long messages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

LO = {"btl_drtcp_if_include": "127.0.0.1/8"}
FAR_ETH0_XML = Path(__file__).resolve().parent.parent / "tests" / "topo" / "far_eth0.xml"

LINE = re.compile(r"\[btl:(drtcp|drucx)\] numa weights: (\S+): (.*?): latency (\d+)(?: -> (\d+))?, "
                  r"bandwidth (\d+)(?: -> (\d+))?( \(unchanged\))?$", re.M)


def single_numa() -> bool:
    try:
        online = Path("/sys/devices/system/node/online").read_text().strip()
    except OSError:
        return True  # no NUMA support in the kernel: one node
    return online == "0"


def chosen(result, component: str) -> list[tuple[str, str, int, int, int, int]]:
    """(device, "locality, speed", latency before, after, bandwidth before, after) per module."""
    result.check()
    out = []
    for m in LINE.finditer(result.stdout + result.stderr):
        if m.group(1) != component:
            continue
        lat0, bw0 = int(m.group(4)), int(m.group(6))
        lat1 = int(m.group(5)) if m.group(5) else lat0
        bw1 = int(m.group(7)) if m.group(7) else bw0
        out.append((m.group(2), m.group(3), lat0, lat1, bw0, bw1))
    return out


def expect_unchanged(lines, n: int, latency: int, bandwidth: int, result) -> None:
    assert len(lines) == n, f"expected {n} 'numa weights' lines, got {lines}:\n{result}"
    for dev, where, lat0, lat1, bw0, bw1 in lines:
        assert (lat0, bw0) == (latency, bandwidth), f"{dev}: configured weights not the base: {lines}"
        assert (lat1, bw1) == (lat0, bw0), f"{dev}: weights changed ({where}): {lines}\n{result}"


@pytest.fixture
def one_numa_node():
    if not single_numa():
        pytest.skip("this machine has several NUMA nodes: weights may change here")


@pytest.mark.mpi_timeout(90)
def test_drtcp_weights_chosen_and_unchanged_on_one_numa_node(mpi, one_numa_node):
    # Two links: one module (and one line) per link, on every rank.
    result = mpi.run("p2p_semantics", np=2, args=[4],
                     mca={"pml": "dr", "btl": "self,drtcp", **LO, "btl_drtcp_links": 2,
                          "btl_drtcp_verbose": 20})
    assert "p2p ok" in result.stdout, result
    lines = chosen(result, "drtcp")
    expect_unchanged(lines, 4, 100, 1000, result)
    assert all(dev == "lo" and where.startswith("single NUMA node") for dev, where, *_ in lines), lines


@pytest.mark.mpi_timeout(90)
def test_drtcp_configured_weights_are_the_base(mpi, one_numa_node):
    """What the user set (btl_drtcp_latency/bandwidth) is what the topology
    weighs, and on one NUMA node what the BML gets."""
    result = mpi.run("ring", np=2, mca={"pml": "dr", "btl": "self,drtcp", **LO,
                                        "btl_drtcp_verbose": 20, "btl_drtcp_latency": 7,
                                        "btl_drtcp_bandwidth": 300})
    assert "ring ok" in result.stdout, result
    expect_unchanged(chosen(result, "drtcp"), 2, 7, 300, result)


@pytest.mark.mpi_timeout(90)
@pytest.mark.parametrize("tls", ["any", "tcp"])
def test_drucx_weights_chosen_and_unchanged_on_one_numa_node(mpi, components, one_numa_node, tls):
    if not any(c.id == "btl/drucx" for c in components):
        pytest.skip("btl drucx not built (no UCX)")
    result = mpi.run("ring", np=2, mca={"pml": "dr", "btl": "self,drucx", "btl_drucx_tls": tls,
                                        "btl_drucx_verbose": 20})
    assert "ring ok" in result.stdout, result
    lines = chosen(result, "drucx")
    expect_unchanged(lines, 2, 1, 10000, result)
    if tls == "tcp":  # a network device: located, one NUMA node
        assert all(dev.startswith("tcp/") and where.startswith("single NUMA node")
                   for dev, where, *_ in lines), lines
    else:  # shared memory: no device, no PCI locality
        assert all(where.startswith("no PCI locality") for _, where, *_ in lines), lines


@pytest.mark.mpi_timeout(90)
@pytest.mark.parametrize("btl", ["drtcp", "drucx"])
def test_numa_weights_off(mpi, components, btl):
    if not any(c.id == f"btl/{btl}" for c in components):
        pytest.skip(f"btl {btl} not built")
    result = mpi.run("ring", np=2, mca={"pml": "dr", "btl": f"self,{btl}", **LO,
                                        f"btl_{btl}_verbose": 20,
                                        f"btl_{btl}_numa_weights": 0})
    assert "ring ok" in result.stdout, result
    lines = chosen(result, btl)
    assert len(lines) == 2, result
    assert all(where == "numa_weights off" for _, where, *_ in lines), lines
    assert all(lat0 == lat1 and bw0 == bw1 for _, _, lat0, lat1, bw0, bw1 in lines), lines


@pytest.mark.mpi_timeout(60)
def test_silent_without_verbose(mpi):
    result = mpi.run("ring", np=2, mca={"pml": "dr", "btl": "self,drtcp", **LO})
    assert "ring ok" in result.stdout, result
    assert "numa weights" not in result.stdout + result.stderr, result


@pytest.mark.mpi_timeout(60)
def test_bad_value_names_the_parameter(mpi):
    result = mpi.run("ring", np=2, mca={"pml": "dr", "btl": "self,drtcp", **LO,
                                        "btl_drtcp_numa_weights": "maybe"})
    assert not result.ok
    assert "btl_drtcp_numa_weights" in result.stderr and '"maybe"' in result.stderr, result


@pytest.mark.mpi_timeout(60)
@pytest.mark.parametrize("btl", ["drtcp", "drucx"])
def test_ompi_info_lists_the_parameters(mpi, components, btl):
    if not any(c.id == f"btl/{btl}" for c in components):
        pytest.skip(f"btl {btl} not built")
    result = mpi.run_tool(["ompi_info", "--param", "btl", btl, "--level", "9", "--parsable"])
    result.check()
    out = result.stdout
    for name in ["numa_weights", "numa_weights_chosen"]:
        assert re.search(rf"mca:btl:{btl}:param:btl_{btl}_{name}:help:.+", out), \
            f"btl_{btl}_{name} without help:\n{out[:3000]}"
    assert re.search(rf"mca:btl:{btl}:param:btl_{btl}_numa_weights:value:true", out), out
    # Informational: not the user's to set; filled in at MPI_Init.
    assert f"btl_{btl}_numa_weights_chosen:status:read-only" in out, out
    assert re.search(rf"btl_{btl}_numa_weights_chosen:level:9", out), out


def path_bytes(result) -> list[int]:
    """bytes= of every [pml:dr] per-path stats line (rank 0 -> 1 and 1 -> 0)."""
    return [int(b) for b in re.findall(r"\[pml:dr\] path .* over drtcp: sent=\d+ bytes=(\d+)",
                                       result.stdout + result.stderr)]


@pytest.mark.mpi_timeout(120)
@pytest.mark.parametrize("weights", [1, 0])
def test_far_nic_gets_the_smaller_share(mpi, weights):
    """Open MPI's topology from an XML file where eth0 is a NIC on the other
    socket: with two drtcp modules (lo: no PCI locality, eth0: far) the far
    one's weights drop (latency 100 -> 210, bandwidth 1000 -> 476) and dr
    splits 4 MiB messages about 2:1 towards lo; with numa_weights=0 evenly."""
    if not Path("/sys/class/net/eth0").exists():
        pytest.skip("no eth0 on this machine")
    result = mpi.run("rail_transfer", np=2, args=[20, 4 << 20], mpirun_args=["--bind-to", "core"],
                     mca={"pml": "dr", "btl": "self,drtcp", "btl_drtcp_if_include": "eth0,lo",
                          "btl_drtcp_verbose": 20, "btl_drtcp_numa_weights": weights,
                          "pml_dr_stats": 1, "hwloc_base_topo_file": str(FAR_ETH0_XML)})
    assert "RAIL_TRANSFER OK" in result.stdout, result
    lines = chosen(result, "drtcp")
    eth0 = [line for line in lines if line[0] == "eth0"]
    lo = [line for line in lines if line[0] == "lo"]
    assert len(eth0) == 2 and len(lo) == 2, lines
    if weights:
        assert all(where.startswith("far (NUMA 1, process on NUMA 0, distance 21/10)") and
                   (lat0, lat1, bw0, bw1) == (100, 210, 1000, 476)
                   for _, where, lat0, lat1, bw0, bw1 in eth0), eth0
        assert all(where.startswith("no PCI locality") and (lat0, bw0) == (lat1, bw1)
                   for _, where, lat0, lat1, bw0, bw1 in lo), lo
    else:
        assert all(where == "numa_weights off" for _, where, *_ in lines), lines
    sent = path_bytes(result)
    assert len(sent) == 4, result
    # Per rank: its two paths' bytes (lines of one rank are printed together).
    ratios = [max(a, b) / max(1, min(a, b)) for a, b in (sent[0:2], sent[2:4])]
    if weights:
        assert all(r > 1.8 for r in ratios), (ratios, sent)  # 1000:476 plus first frames on lo
    else:
        assert all(r < 1.2 for r in ratios), (ratios, sent)
