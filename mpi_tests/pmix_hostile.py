"""Hostile clients for pmix dr's Unix socket, and the job they attack.

`VictimJob` runs mpi_tests/programs/pmix_victim.c in the background: it
reports the server's socket path, keeps the job busy with requests through
the server (its heartbeat shows it is not stalled) and ends, printing
"victim ok N ITERATIONS", once told to. The helpers below speak just enough
of the wire protocol (plugin/pmix/core/wire.hpp) to look plausible, and
`run_as_nobody` connects from another uid (needs root).
"""

from __future__ import annotations

import concurrent.futures
import json
import select
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import harness

HELLO, COMMIT = 1, 2


def header(msg_type: int, length: int, version: int = 1, req: int = 1) -> bytes:
    return struct.pack(">4sBBHII", b"DRPX", version, msg_type, 0, length, req)


def hello(jobid: int, vpid: int, secret: int) -> bytes:
    return header(HELLO, 16) + struct.pack(">IIQ", jobid, vpid, secret)


def connect(path: str, within: float = 10.0) -> socket.socket:
    """A connection to the server; retried while its listen queue is full
    (EAGAIN), for `within` seconds at most."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(within)
    deadline = time.monotonic() + within
    while True:
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def send_some(s: socket.socket, data: bytes) -> None:
    """Sends what the server still takes (it may hang up first)."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def wait_closed(s: socket.socket, within: float, what: str) -> tuple[float, bytes]:
    """Reads until the server hangs up: (seconds it took, bytes it sent).
    AssertionError if the connection is still open after `within` seconds."""
    start = time.monotonic()
    got = b""
    while True:
        left = within - (time.monotonic() - start)
        if left <= 0:
            raise AssertionError(f"{what}: still open after {within:.1f} s")
        readable, _, _ = select.select([s], [], [], left)
        if not readable:
            continue
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return time.monotonic() - start, got
        got += chunk


def closed_unanswered(s: socket.socket, within: float, what: str) -> float:
    took, got = wait_closed(s, within, what)
    s.close()
    assert got == b"", f"{what}: the server answered {got[:64]!r}"
    return took


# A client of another user: connects to argv[1], sends argv[2] (hex), then
# reads until the server hangs up or argv[3] seconds pass; prints JSON.
_AS_NOBODY = r"""
import errno, json, select, socket, sys, time
target, payload, within = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(target)
except OSError as e:
    print(json.dumps({"error": errno.errorcode.get(e.errno, str(e.errno))}))
    sys.exit(0)
start = time.monotonic()
try:
    s.sendall(payload)
except OSError:
    pass
got, closed = b"", None
while closed is None and time.monotonic() - start < within:
    if select.select([s], [], [], 0.05)[0]:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            closed = time.monotonic() - start
        got += chunk
print(json.dumps({"closed_after": closed, "reply_bytes": len(got)}))
"""


def run_as_nobody(target: str, payload: bytes = b"", within: float = 5.0,
                  pass_fds: tuple[int, ...] = ()) -> dict:
    """Runs the client above as nobody:nogroup with no other groups."""
    proc = subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, target, payload.hex(), str(within)],
        user="nobody", group="nogroup", extra_groups=[], pass_fds=pass_fds, cwd="/",
        env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=within + 30)
    assert proc.returncode == 0, f"client as nobody failed:\n{proc.stdout}{proc.stderr}"
    return json.loads(proc.stdout)


class VictimJob:
    """pmix_victim running under mpirun in a thread until `finish()`."""

    def __init__(self, mpi: harness.MpiRunner, tmp_path: Path, mca: dict, np: int = 2,
                 timeout: float = 240):
        self.info = tmp_path / "victim-info"
        self.go = tmp_path / "victim-go"
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._run = self._pool.submit(mpi.run, "pmix_victim", np=np, mca=mca,
                                      args=[self.info, self.go], timeout=timeout)
        deadline = time.monotonic() + 60 * harness.timeout_scale()
        while not self.info.exists():
            if self._run.done() or time.monotonic() > deadline:
                raise AssertionError(f"the victim job did not start:\n{self.finish()}")
            time.sleep(0.1)
        self.uri, proc = self.info.read_text().split()
        jobid, vpid = proc.split(".")
        self.jobid, self.vpid = int(jobid), int(vpid)

    def beat(self) -> int:
        """Iterations the job has completed so far."""
        try:
            return int((self.info.parent / (self.info.name + ".beat")).read_text())
        except (OSError, ValueError):
            return 0

    def still_served(self, within: float = 20.0) -> None:
        """The job completes requests through the server right now."""
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

    def __enter__(self) -> "VictimJob":
        return self

    def __exit__(self, *exc) -> None:
        self.go.touch()  # never leave the job running after a failed check


# ------------------------------------------------------------------ attacks
#
# Each runs against a VictimJob whose server has hello_timeout = HELLO_TIMEOUT,
# checks what its connections saw, and returns how many connections it made
# and the server counters it must have moved (as parsed by
# test_pmix_dr.served_counters): the others stay 0.

HELLO_TIMEOUT = 2  # seconds; the server's tick makes it 2-3 s
PROMPT = 1.5       # a refusal that does not wait for the hello deadline


def random_bytes(job: VictimJob) -> dict[str, int]:
    """20 connections send 16 B - 4 KiB of seeded noise (never the magic)."""
    import random
    rng = random.Random(24)
    for i in range(20):
        noise = bytearray(rng.randbytes(rng.randint(16, 4096)))
        if noise[:4] == b"DRPX":
            noise[0] ^= 0xFF
        s = connect(job.uri)
        send_some(s, bytes(noise))
        closed_unanswered(s, PROMPT, f"noise {i}")
    return {"connections": 20, "bad": 20}


def huge_length(job: VictimJob) -> dict[str, int]:
    """A Hello announcing 4 GiB, one announcing 32 MiB (under max_msg_size)
    followed by 64 KiB, and a 1 MiB Commit before any Hello: each closed at
    once, without the server waiting for (or buffering) the payload."""
    for what, msg in (("4 GiB hello", header(HELLO, 0xFFFFFFFF)),
                      ("32 MiB hello", header(HELLO, 32 << 20) + bytes(65536)),
                      ("1 MiB commit before hello", header(COMMIT, 1 << 20) + bytes(1000))):
        s = connect(job.uri)
        send_some(s, msg)
        closed_unanswered(s, PROMPT, what)
    return {"connections": 3, "bad": 3}


def unknown_identity(job: VictimJob) -> dict[str, int]:
    """Well-formed Hellos: a rank the job does not have, a job that does
    not exist, and rank 0's own name with a guessed secret."""
    for what, msg in (("unknown rank", hello(job.jobid, 4000000, 0x5EC2E7)),
                      ("unknown job", hello(job.jobid ^ 0x10000, 0, 0x5EC2E7)),
                      ("guessed secret", hello(job.jobid, job.vpid, 0x5EC2E7))):
        s = connect(job.uri)
        send_some(s, msg)
        closed_unanswered(s, PROMPT, what)
    return {"connections": 3, "refused": 3}


def half_open(job: VictimJob) -> dict[str, int]:
    """One connection that sends nothing: closed at the hello deadline; one
    that shuts its sending side at once: closed when the server sees EOF."""
    silent = connect(job.uri)
    shut = connect(job.uri)
    shut.shutdown(socket.SHUT_WR)
    closed_unanswered(shut, PROMPT, "shut for writing")
    took = closed_unanswered(silent, HELLO_TIMEOUT + 3, "silent")
    assert took >= HELLO_TIMEOUT - 1.1, f"silent: closed after {took:.1f} s, before the deadline"
    return {"connections": 2, "refused": 1, "late": 1}


def slow(job: VictimJob) -> dict[str, int]:
    """A Hello sent one byte a second: closed at the hello deadline, long
    before it is complete."""
    msg = hello(job.jobid, 4000000, 1)
    s = connect(job.uri)
    start = time.monotonic()
    sent = 0
    while sent < len(msg) and time.monotonic() - start < HELLO_TIMEOUT + 3:
        send_some(s, msg[sent:sent + 1])
        sent += 1
        if select.select([s], [], [], 1.0)[0]:
            break
    closed_unanswered(s, 0.5, f"one byte a second ({sent} bytes sent)")
    assert sent < len(msg), "one byte a second: the whole hello went through"
    return {"connections": 1, "refused": 1, "late": 1}


def crowd(job: VictimJob, n: int = 200) -> dict[str, int]:
    """n connections at once that say nothing: past 64 waiting the oldest
    goes, the rest at the hello deadline; the job is served meanwhile."""
    socks = [connect(job.uri) for _ in range(n)]
    job.still_served()
    deadline = time.monotonic() + HELLO_TIMEOUT + 5
    for i, s in enumerate(socks):
        closed_unanswered(s, max(deadline - time.monotonic(), 0.1), f"crowd member {i}")
    return {"connections": n, "refused": n, "late": 64}


ATTACKS = {f.__name__: f for f in (random_bytes, huge_length, unknown_identity, half_open,
                                   slow, crowd)}
