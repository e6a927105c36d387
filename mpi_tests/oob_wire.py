"""Hostile clients for oob drtcp's listener, and the job they attack.

`OobVictim` runs mpi_tests/programs/pmix_victim.c (stock PMIx: its INFO
file then says "none", which is enough to know the job runs) under mpirun
with `--report-uri`, which gives mpirun's name (the job family's daemon job
id) and its oob drtcp addresses. The frame builders speak just enough of the
wire (oob/drtcp/core/wire.hpp) to look plausible: the version 1 CONNECT of
the first release (issue 24's crash) and the version 2 handshake frames.
"""

from __future__ import annotations

import concurrent.futures
import select
import socket
import struct
import time
from pathlib import Path

import harness

MAGIC = b"DROB"
HELLO, REPLY, CONFIRM = 1, 2, 3
FLAG_RECONNECT = 1
HANDSHAKE_SIZE = 76


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def sealed(body: bytes) -> bytes:
    return body + struct.pack(">I", crc32c(body))


def connect_v1(jobid: int, vpid: int) -> bytes:
    """The 24-byte CONNECT of wire version 1: magic, version, the sender's
    name, CRC32C (what issue 24's forged client sent)."""
    return sealed(MAGIC + struct.pack(">BBHIII", 1, 0, 0, jobid, vpid, 0))


def handshake(kind: int, sender: tuple[int, int], receiver: tuple[int, int],
              nonce: bytes = bytes(16), mac: bytes = bytes(32), flags: int = 0,
              version: int = 2) -> bytes:
    """A version 2 handshake frame (HELLO, REPLY or CONFIRM), 76 bytes."""
    body = MAGIC + struct.pack(">BBBBIIII", version, kind, flags, 0, *sender, *receiver)
    return sealed(body + nonce + mac)


# ------------------------------------------------------------------ sockets

def connect(addr: tuple[str, int], within: float = 10.0) -> socket.socket:
    s = socket.create_connection(addr, timeout=within)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send_some(s: socket.socket, data: bytes) -> None:
    """Sends what the listener still takes (it may hang up first)."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def listen_for(s: socket.socket, within: float) -> tuple[float | None, bytes]:
    """Reads for `within` seconds at most: (seconds until the other side
    hung up, or None if it did not; every byte it sent)."""
    start = time.monotonic()
    got = b""
    while True:
        left = within - (time.monotonic() - start)
        if left <= 0:
            return None, got
        if not select.select([s], [], [], left)[0]:
            continue
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return time.monotonic() - start, got
        got += chunk


def closed_unanswered(s: socket.socket, within: float, what: str) -> float:
    took, got = listen_for(s, within)
    s.close()
    assert got == b"", f"{what}: mpirun answered {got[:80].hex()}"
    assert took is not None, f"{what}: still open after {within:.1f} s"
    return took


# ------------------------------------------------------------------ the job

class OobVictim:
    """pmix_victim under mpirun --report-uri in a thread, until `finish()`."""

    def __init__(self, mpi: harness.MpiRunner, tmp_path: Path, mca: dict, np: int = 2,
                 mpirun_args: tuple[str, ...] = (), timeout: float = 240):
        self.info = tmp_path / "victim-info"
        self.go = tmp_path / "victim-go"
        self.urifile = tmp_path / "hnp-uri"
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._run = self._pool.submit(
            mpi.run, "pmix_victim", np=np, mca=mca, args=[self.info, self.go], timeout=timeout,
            mpirun_args=["--report-uri", str(self.urifile), *mpirun_args])
        deadline = time.monotonic() + 60 * harness.timeout_scale()
        while not self.info.exists():
            if self._run.done() or time.monotonic() > deadline:
                raise AssertionError(f"the victim job did not start:\n{self.finish()}")
            time.sleep(0.1)
        self.jobid, self.vpid, self.addrs = parse_uri(self.urifile.read_text())

    @property
    def addr(self) -> tuple[str, int]:
        """mpirun's first IPv4 oob drtcp address."""
        return next(a for a in self.addrs if ":" not in a[0])

    def beat(self) -> int:
        try:
            return int((self.info.parent / (self.info.name + ".beat")).read_text())
        except (OSError, ValueError):
            return 0

    def still_running(self, within: float = 20.0) -> None:
        """The job makes progress right now."""
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

    def __enter__(self) -> "OobVictim":
        return self

    def __exit__(self, *exc) -> None:
        self.go.touch()


def parse_uri(text: str) -> tuple[int, int, list[tuple[str, int]]]:
    """"JOBID.VPID;drtcp://a.b.c.d:port,[v6]:port;tcp://..." -> the name and
    the drtcp addresses."""
    parts = text.strip().split(";")
    jobid, vpid = (int(x) for x in parts[0].split("."))
    addrs = []
    for part in parts[1:]:
        if not part.startswith("drtcp://"):
            continue
        for item in part[len("drtcp://"):].split(","):
            host, _, port = item.rpartition(":")
            addrs.append((host.strip("[]"), int(port)))
    assert addrs, f"no drtcp address in {text!r}"
    return jobid, vpid, addrs


# ------------------------------------------------------------------ attacks
#
# Each runs against an OobVictim whose mpirun has oob_drtcp_connect_timeout
# = DEADLINE s (the time an accepted connection has to complete its
# handshake), checks what its connections saw, and returns how many
# connections it made and the counters of mpirun's shutdown line (see
# test_oob_drtcp.stats) it must have moved; the others stay 0.

DEADLINE = 2   # seconds
PROMPT = 1.5   # a refusal that does not wait for the deadline


def random_bytes(job: OobVictim) -> dict[str, int]:
    """20 connections send 16 B - 4 KiB of seeded noise (never the magic):
    each closed at once, unanswered."""
    import random
    rng = random.Random(24)
    for i in range(20):
        noise = bytearray(rng.randbytes(rng.randint(16, 4096)))
        if noise[:4] == MAGIC:
            noise[0] ^= 0xFF
        s = connect(job.addr)
        send_some(s, bytes(noise))
        closed_unanswered(s, PROMPT, f"noise {i}")
    return {"connections": 20, "errors": 20}


def huge_length(job: OobVictim) -> dict[str, int]:
    """A message header announcing 4 GiB before any handshake, and 1 MiB of
    zeros: closed at once, without mpirun reading (or buffering) it."""
    header = struct.pack(">BBBBIIIIIII", 0xD9, 2, 1, 5, job.jobid, 1, job.jobid, 0, 1, 1,
                         0xFFFFFFFF) + bytes(36)
    for what, msg in (("4 GiB header", sealed(header)), ("1 MiB of zeros", bytes(1 << 20))):
        s = connect(job.addr)
        send_some(s, msg)
        closed_unanswered(s, PROMPT, what)
    return {"connections": 2, "errors": 2}


def forged_unknown(job: OobVictim) -> dict[str, int]:
    """Well-formed version 2 HELLOs for processes that are not daemons of
    the job: daemon 1 of a one-host job, a daemon of another job family, a
    rank of the job (its application job id), mpirun's own name, and a
    HELLO for another receiver. No reply to any."""
    me = (job.jobid, job.vpid)
    for what, sender, receiver in (
            ("daemon 1 of a one-host job", (job.jobid, 1), me),
            ("another job family", (job.jobid ^ 0x10000, 1), me),
            ("a rank", (job.jobid + 1, 0), me),
            ("mpirun itself", me, me),
            ("for another process", (job.jobid, 1), (job.jobid, 7))):
        s = connect(job.addr)
        send_some(s, handshake(HELLO, sender, receiver, nonce=bytes(range(16))))
        closed_unanswered(s, PROMPT, what)
    return {"connections": 5, "refused": 5, "identity": 5}


def half_open(job: OobVictim) -> dict[str, int]:
    """One connection that sends nothing: closed at the deadline; one that
    shuts its sending side at once: closed when mpirun sees EOF."""
    silent = connect(job.addr)
    shut = connect(job.addr)
    shut.shutdown(socket.SHUT_WR)
    closed_unanswered(shut, PROMPT, "shut for writing")
    took = closed_unanswered(silent, DEADLINE + 3, "silent")
    assert took >= DEADLINE - 1.1, f"silent: closed after {took:.1f} s, before the deadline"
    return {"connections": 2, "refused": 1, "late": 1}


def slow(job: OobVictim) -> dict[str, int]:
    """A HELLO sent one byte a second: closed at the deadline, long before
    it is complete."""
    msg = handshake(HELLO, (job.jobid, 1), (job.jobid, job.vpid))
    s = connect(job.addr)
    start = time.monotonic()
    sent = 0
    while sent < len(msg) and time.monotonic() - start < DEADLINE + 3:
        send_some(s, msg[sent:sent + 1])
        sent += 1
        if select.select([s], [], [], 1.0)[0]:
            break
    closed_unanswered(s, 0.5, f"one byte a second ({sent} bytes sent)")
    assert sent < len(msg), "one byte a second: the whole HELLO went through"
    return {"connections": 1, "refused": 1, "late": 1}


def crowd(job: OobVictim, n: int = 200) -> dict[str, int]:
    """n connections at once that say nothing: past 64 waiting the oldest
    goes, the rest at the deadline; the job runs on meanwhile."""
    socks = [connect(job.addr) for _ in range(n)]
    job.still_running()
    deadline = time.monotonic() + DEADLINE + 5
    for i, s in enumerate(socks):
        closed_unanswered(s, max(deadline - time.monotonic(), 0.1), f"crowd member {i}")
    return {"connections": n, "refused": n, "late": n}


ATTACKS = {f.__name__: f for f in (random_bytes, huge_length, forged_unknown, half_open, slow,
                                   crowd)}
