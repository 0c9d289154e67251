#!/usr/bin/env python3
"""straggler.py: a real gloo job (torch.multiprocessing.spawn, CPU) whose last rank becomes
a straggler, for trainwatch's slowdown tests.

Each step every rank computes a little, sleeps --step-ms (its share of a real step), then
all-reduces its gradients, so the fast ranks wait in the collective for the slowest. Rank 0
prints "step N/100000" each step. After --steady seconds the last rank adds --extra-ms to
each of its steps: --mode busy spins (a slow device, a CPU-bound straggler), --mode sleep
sleeps (a starved data loader). --mode quota adds nothing itself: every rank spins --busy-ms
each step, and the test puts the last rank under a CPU quota (a throttled device's analogue);
each rank prints its pid for that. The job ends after --seconds.

usage: /usr/bin/python3 straggler.py [--ranks N] [--mode busy|sleep|quota] [--steady S]
           [--seconds S] [--step-ms MS] [--extra-ms MS] [--busy-ms MS] [--port P]
"""
import os
import sys


def die_with_parent():
    import ctypes
    import signal
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


if __name__ == "__mp_main__":
    die_with_parent()

import argparse
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def spin(ms):
    # CPU time, not wall time: under a CPU quota the same work takes longer.
    end = time.process_time() + ms / 1000
    while time.process_time() < end:
        pass


def worker(rank, args):
    die_with_parent()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.ranks, timeout=timedelta(minutes=5))
    print(f"rank {rank}: process group ready (gloo, world_size {args.ranks}), pid {os.getpid()}",
          flush=True)
    model = torch.nn.Linear(64, 64)
    x = torch.randn(64, 64)
    start = time.monotonic()
    slow_from = start + args.steady
    straggler = rank == args.ranks - 1
    step = 0
    while True:
        step += 1
        model.zero_grad()
        model(x).sum().backward()
        time.sleep(args.step_ms / 1000)
        spin(args.busy_ms)
        if straggler and time.monotonic() >= slow_from:
            if args.mode == "busy":
                spin(args.extra_ms)
            elif args.mode == "sleep":
                time.sleep(args.extra_ms / 1000)
        for parameter in model.parameters():
            dist.all_reduce(parameter.grad)
        if rank == 0:
            print(f"step {step}/100000", flush=True)
        # Every rank stops at the same step: rank 0's clock decides.
        done = torch.tensor([float(rank == 0 and time.monotonic() - start >= args.seconds)])
        dist.all_reduce(done)
        if done.item() > 0:
            break
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--mode", choices=["busy", "sleep", "quota"], default="busy")
    p.add_argument("--steady", type=float, default=8)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--step-ms", type=float, default=20)
    p.add_argument("--extra-ms", type=float, default=40)
    p.add_argument("--busy-ms", type=float, default=0)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.port == 0:
        args.port = free_port()
    mp.spawn(worker, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
