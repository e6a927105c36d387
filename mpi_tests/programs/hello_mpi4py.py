"""mpi4py smoke program: point-to-point around a ring plus a reduction.

Rank 0 prints "mpi4py ok <size> <sum>"; any mismatch raises (non-zero exit).
"""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

payload = {"from": rank, "data": list(range(rank, rank + 100))}
received = comm.sendrecv(payload, dest=(rank + 1) % size, source=(rank - 1) % size)
prev = (rank - 1) % size
if received != {"from": prev, "data": list(range(prev, prev + 100))}:
    raise SystemExit(f"rank {rank}: bad message from {prev}: {received!r}")

total = comm.allreduce(rank + 1, op=MPI.SUM)
if total != size * (size + 1) // 2:
    raise SystemExit(f"rank {rank}: allreduce gave {total}")
if rank == 0:
    print(f"mpi4py ok {size} {total}", flush=True)
