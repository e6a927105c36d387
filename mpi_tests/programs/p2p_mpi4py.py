"""mpi4py over the PML under test: numpy-free buffer messages of many sizes,
pickled objects, probes, non-blocking requests and a few collectives.

Rank 0 prints "p2p_mpi4py ok <size>"; any mismatch raises (non-zero exit).
"""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size


def pattern(src: int, n: int) -> bytearray:
    return bytearray((src * 7 + i * 13) & 0xFF for i in range(n))


for n in (0, 1, 255, 4096, 70000, 1 << 20):
    out = pattern(rank, n)
    inb = bytearray(n)
    req = comm.Irecv([inb, MPI.BYTE], source=left, tag=n % 1000)
    comm.Send([out, MPI.BYTE], dest=right, tag=n % 1000)
    status = MPI.Status()
    req.Wait(status)
    if inb != pattern(left, n) or status.Get_count(MPI.BYTE) != n or status.Get_source() != left:
        raise SystemExit(f"rank {rank}: buffer message of {n} bytes from {left} wrong")

# Pickled objects, probe for the size first.
obj = {"rank": rank, "blob": bytes(pattern(rank, 5000))}
sreq = comm.isend(obj, dest=right, tag=7)  # keep the request: it owns the pickle
status = MPI.Status()
comm.probe(source=MPI.ANY_SOURCE, tag=7, status=status)
got = comm.recv(source=status.Get_source(), tag=7)
sreq.wait()
if got["rank"] != left or got["blob"] != bytes(pattern(left, 5000)):
    raise SystemExit(f"rank {rank}: pickled object from {left} wrong")

gathered = comm.allgather(rank)
if gathered != list(range(size)):
    raise SystemExit(f"rank {rank}: allgather gave {gathered}")
if comm.bcast("hello" if rank == 0 else None, root=0) != "hello":
    raise SystemExit(f"rank {rank}: bcast wrong")
comm.Barrier()
if rank == 0:
    print(f"p2p_mpi4py ok {size}", flush=True)
