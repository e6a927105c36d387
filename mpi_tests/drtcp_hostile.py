"""Hostile clients for btl drtcp's listening ports, and the job they attack.

`DrtcpVictim` runs mpi_tests/programs/drtcp_victim.c (4 ranks around a
ring, every byte checked) in the background until `finish()`. The ranks'
listening ports are found from /proc: the rank writes its pid, and the
listening TCP sockets among that pid's descriptors are drtcp's (a rank
listens on nothing else). The helpers speak just enough of drtcp wire v2
(btl/drtcp/core/wire.hpp) to look plausible.

Each attack returns how many connections it made and the refusal counters
(summed over the ranks, as `refusals()` parses them from the ranks'
finalize line at btl_drtcp_verbose 20) it must at least have moved.
"""

from __future__ import annotations

import concurrent.futures
import os
import random
import select
import socket
import struct
import threading
import time
from pathlib import Path

import harness
from pmix_hostile import send_some, wait_closed

MAGIC = 0x44525443
VERSION = 2
HELLO, REPLY, CONFIRM = 1, 2, 3
HELLO_SIZE = 76
CONNECT_TIMEOUT = 10  # s: btl_drtcp_connect_timeout's default (a silent caller's deadline)
PROMPT = 2.0          # s: a refusal that does not wait for the deadline


def preamble(msg_type: int, length: int, version: int = VERSION) -> bytes:
    return struct.pack(">IBBH", MAGIC, version, msg_type, length)


def hello(from_job: int, from_vpid: int, to_job: int, to_vpid: int, link: int = 0,
          seq: int | None = None, mac: bytes | None = None) -> bytes:
    """A well-formed HELLO; the MAC is random (made without the key)."""
    seq = time.monotonic_ns() // 1000 + (1 << 40) if seq is None else seq
    nonce = struct.pack(">Q", seq) + os.urandom(8)
    mac = os.urandom(32) if mac is None else mac
    return (preamble(HELLO, HELLO_SIZE) + struct.pack(">HBBIIII", link, 0, 0, from_job,
                                                      from_vpid, to_job, to_vpid) + nonce + mac)


def connect(port: int, within: float = 10.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=within)


def closed_unanswered(s: socket.socket, within: float, what: str) -> float:
    took, got = wait_closed(s, within, what)
    s.close()
    assert got == b"", f"{what}: drtcp answered {got[:64]!r}"
    return took


def listening_ports(pid: int) -> list[int]:
    """TCP ports a process listens on: its socket inodes in /proc/net/tcp{,6}."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                ports.append(int(f[1].rsplit(":", 1)[1], 16))
    return sorted(set(ports))


def can_sniff() -> bool:
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
        return True
    except OSError:
        return False


def _sniff_hellos(out: list[tuple[int, bytes]], stop: threading.Event) -> None:
    """Appends (destination port, HELLO) for every drtcp v2 HELLO seen on
    loopback (IPv4) until `stop`."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    s.bind(("lo", 0))
    s.settimeout(0.1)
    head = preamble(HELLO, HELLO_SIZE)
    try:
        while not stop.is_set():
            try:
                frame, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue  # loopback shows each packet twice
            ip = frame[14:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            tcp = ip[(ip[0] & 15) * 4:]
            if len(tcp) < 20:
                continue
            payload = tcp[(tcp[12] >> 4) * 4:]
            if payload[:8] == head and len(payload) >= HELLO_SIZE:
                out.append((struct.unpack(">H", tcp[2:4])[0], payload[:HELLO_SIZE]))
    finally:
        s.close()


class DrtcpVictim:
    """drtcp_victim under mpirun in a thread until `finish()`."""

    def __init__(self, mpi: harness.MpiRunner, tmp_path: Path, mca: dict, np: int = 4,
                 timeout: float = 240, sniff: bool = False):
        self.np = np
        self.captured: list[tuple[int, bytes]] = []
        stop_sniffing = threading.Event()
        sniffer = None
        if sniff:
            sniffer = threading.Thread(target=_sniff_hellos, args=(self.captured, stop_sniffing),
                                       daemon=True)
            sniffer.start()
        self.info = tmp_path / "victim-info"
        self.go = tmp_path / "victim-go"
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._run = self._pool.submit(mpi.run, "drtcp_victim", np=np, mca=mca,
                                      args=[self.info, self.go], timeout=timeout)
        deadline = time.monotonic() + 60 * harness.timeout_scale()
        self.pids: list[int] = []
        self.jobid = 0
        for rank in range(np):
            f = Path(f"{self.info}.{rank}")
            while not f.exists():
                if self._run.done() or time.monotonic() > deadline:
                    raise AssertionError(f"the victim job did not start:\n{self.finish()}")
                time.sleep(0.05)
            pid, jobid, _ = f.read_text().split()
            self.pids.append(int(pid))
            self.jobid = int(jobid)
        # The ring is up (every rank past its first exchanges): ports are open.
        self.still_running()
        stop_sniffing.set()
        if sniffer is not None:
            sniffer.join(5)
        self.ports = [listening_ports(pid) for pid in self.pids]
        assert all(self.ports), f"a rank listens on no TCP port: {self.ports}"

    def port(self, rank: int) -> int:
        return self.ports[rank][0]

    def beat(self) -> int:
        try:
            return int(Path(f"{self.info}.beat").read_text())
        except (OSError, ValueError):
            return 0

    def still_running(self, within: float = 30.0) -> None:
        """The ring completes exchanges right now."""
        start = self.beat()
        deadline = time.monotonic() + within * harness.timeout_scale()
        while self.beat() < start + 3:
            assert time.monotonic() < deadline and not self._run.done(), \
                f"the job stalled at iteration {self.beat()}"
            time.sleep(0.05)

    def finish(self) -> harness.RunResult:
        self.go.touch()
        try:
            return self._run.result()
        finally:
            self._pool.shutdown()

    def __enter__(self) -> "DrtcpVictim":
        return self

    def __exit__(self, *exc) -> None:
        self.go.touch()


# ------------------------------------------------------------------ attacks
#
# Rank r's ring neighbours are r-1 and r+1: with 4 ranks the pairs 0-2 and
# 1-3 never connect, so a HELLO from rank 2 to rank 0 meets only the MAC
# check, while one from rank 1 to rank 0 meets an established connection.


def random_bytes(job: DrtcpVictim) -> dict[str, int]:
    """20 connections send 16 B - 4 KiB of seeded noise (never the magic)."""
    rng = random.Random(24)
    for i in range(20):
        noise = bytearray(rng.randbytes(rng.randint(16, 4096)))
        if noise[:4] == b"DRTC":
            noise[0] ^= 0xFF
        s = connect(job.port(i % job.np))
        send_some(s, bytes(noise))
        closed_unanswered(s, PROMPT, f"noise {i}")
    return {"connections": 20, "malformed": 20}


def huge_lengths(job: DrtcpVictim) -> dict[str, int]:
    """A frame header announcing 4 GiB as the first bytes, a HELLO preamble
    announcing 64 KiB followed by 64 KiB, a version-1 HELLO: each closed
    after its first 8 bytes, nothing buffered or answered."""
    frame = struct.pack(">BBHI", 0xD7, 65, 0, 0xFFFFFFF0)
    for what, msg in (("4 GiB frame", frame + bytes(1000)),
                      ("64 KiB hello", preamble(HELLO, 0xFFFF) + bytes(65536)),
                      ("version 1", preamble(HELLO, HELLO_SIZE, version=1) + bytes(68))):
        s = connect(job.port(0))
        send_some(s, msg)
        closed_unanswered(s, PROMPT, what)
    return {"connections": 3, "malformed": 3}


def forged_real_rank(job: DrtcpVictim) -> dict[str, int]:
    """Well-formed HELLOs naming REAL ranks, made without the key: rank 2 to
    rank 0 and rank 3 to rank 1 (pairs that never connect: only the MAC can
    refuse them), rank 1 to rank 0 (an established pair: a duplicate). No
    reply byte to any."""
    for what, msg, port in (
            ("rank 2 -> 0", hello(job.jobid, 2, job.jobid, 0), job.port(0)),
            ("rank 3 -> 1", hello(job.jobid, 3, job.jobid, 1), job.port(1)),
            ("rank 2 -> 0, zero MAC", hello(job.jobid, 2, job.jobid, 0, mac=bytes(32)),
             job.port(0)),
            ("rank 1 -> 0", hello(job.jobid, 1, job.jobid, 0), job.port(0))):
        s = connect(port)
        send_some(s, msg)
        closed_unanswered(s, PROMPT, what)
    return {"connections": 4, "bad-mac": 3, "duplicate": 1}


def unknown_identity(job: DrtcpVictim) -> dict[str, int]:
    """HELLOs for a rank the job does not have (its size, and 4000000), for
    another job, and addressed to a rank that is not the one listening."""
    for what, msg, kind in (
            ("rank 4000000", hello(job.jobid, 4000000, job.jobid, 0), "beyond-job"),
            ("rank == size", hello(job.jobid, job.np, job.jobid, 0), "beyond-job"),
            ("another job", hello(job.jobid ^ 0x10000, 0, job.jobid, 0), "wrong-job"),
            ("addressed elsewhere", hello(job.jobid, 2, job.jobid, 3), "not-for-us")):
        s = connect(job.port(0))
        send_some(s, msg)
        closed_unanswered(s, PROMPT, f"{what} ({kind})")
    return {"connections": 4, "beyond-job": 2, "wrong-job": 1, "not-for-us": 1}


def replayed_handshake(job: DrtcpVictim) -> dict[str, int]:
    """The job's own HELLOs, captured on loopback as its ranks connected
    (DrtcpVictim(sniff=True), needs root), sent again to the rank they were
    for: no reply byte (the pair is connected: refused as a duplicate; once
    a connection is gone its HELLO would be refused as a replay: its
    sequence is old)."""
    assert job.captured, "no HELLO captured from the job's own connections"
    for i, (dport, msg) in enumerate(job.captured):
        s = connect(dport)
        send_some(s, msg)
        closed_unanswered(s, PROMPT, f"replay {i}")
    return {"connections": len(job.captured), "duplicate": len(job.captured)}


def half_open(job: DrtcpVictim) -> dict[str, int]:
    """One connection that sends nothing: closed at the connect deadline;
    one that shuts its sending side at once: closed when drtcp sees EOF."""
    silent = connect(job.port(1), within=CONNECT_TIMEOUT + 10)
    shut = connect(job.port(1))
    shut.shutdown(socket.SHUT_WR)
    closed_unanswered(shut, PROMPT, "shut for writing")
    took = closed_unanswered(silent, CONNECT_TIMEOUT + 5, "silent")
    assert took >= CONNECT_TIMEOUT - 2, f"silent: closed after {took:.1f} s, before the deadline"
    return {"connections": 2, "silent": 2}


def slow(job: DrtcpVictim) -> dict[str, int]:
    """A HELLO sent one byte a second: closed at the connect deadline, long
    before it is complete (76 s)."""
    msg = hello(job.jobid, 2, job.jobid, 0)
    s = connect(job.port(0), within=CONNECT_TIMEOUT + 10)
    start = time.monotonic()
    sent = 0
    closed = False
    while sent < len(msg) and time.monotonic() - start < CONNECT_TIMEOUT + 5:
        send_some(s, msg[sent:sent + 1])
        sent += 1
        if select.select([s], [], [], 1.0)[0]:
            closed = True
            break
    assert closed, f"slow: still open after {time.monotonic() - start:.1f} s"
    closed_unanswered(s, 1.0, "slow")
    assert sent < len(msg) // 2, f"slow: {sent} bytes taken before the close"
    return {"connections": 1, "silent": 1}


def concurrent_200(job: DrtcpVictim) -> dict[str, int]:
    """200 connections at once on one rank: half send a forged HELLO for a
    real rank (no key), half say nothing. Every one closed unanswered
    (the silent ones past the bound of unidentified callers at once, the
    rest at the deadline), and the ring goes on meanwhile."""
    socks = []
    for i in range(200):
        s = connect(job.port(0), within=CONNECT_TIMEOUT + 20)
        if i % 2 == 0:
            send_some(s, hello(job.jobid, 2, job.jobid, 0))
        socks.append(s)
    job.still_running()
    for i, s in enumerate(socks):
        closed_unanswered(s, CONNECT_TIMEOUT + 10, f"concurrent {i}")
    return {"connections": 200, "bad-mac": 1}


ATTACKS = {f.__name__: f for f in (random_bytes, huge_lengths, forged_real_rank,
                                   unknown_identity, replayed_handshake, half_open, slow,
                                   concurrent_200)}
