#!/usr/bin/env python3
"""independent_ranks.py: a gloo job of --ranks ranks started the way srun or a hand-written
launcher starts them — each its own interpreter with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in its environment, none cleaning up after another — where, after --crash-at
steps of all_reduce, the last rank crashes with a CUDA-style error while the others go on to
a long pause outside any collective (a slow checkpoint write), so the survivors live on.
(Blocked in a collective with the dead rank they would not: gloo sees its peer's socket close
and raises at once; NCCL ranks hang there instead, until the watchdog kills them.)

For trainwatch's tests of a crash while other ranks live. All ranks write to this process's
stdout. Stop it by killing its process group.

usage: /usr/bin/python3 independent_ranks.py [--ranks N] [--crash-at STEP]
"""
import argparse
import os
import socket
import subprocess
import sys


def rank_main():
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    crash_at = int(os.environ["CRASH_AT"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=timedelta(hours=1))
    print(f"rank {rank}: process group ready (gloo, world_size {world})", flush=True)
    t = torch.ones(8)
    for step in range(crash_at):
        dist.all_reduce(t)
        print(f"rank {rank}: step {step}", flush=True)
    if rank == world - 1:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    write_checkpoint()


def write_checkpoint():
    import time
    time.sleep(3600)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--crash-at", type=int, default=3)
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    children = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), CRASH_AT=str(args.crash_at),
                   GLOO_SOCKET_IFNAME="lo")
        children.append(subprocess.Popen([sys.executable, __file__, "--rank-main"], env=env))
    for child in children:
        child.wait()


if __name__ == "__main__":
    if sys.argv[1:] == ["--rank-main"]:
        rank_main()
    else:
        main()
