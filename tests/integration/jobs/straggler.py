#!/usr/bin/env python3
"""straggler.py: a real gloo job (torch.multiprocessing.spawn, CPU) whose last rank becomes
a straggler, for trainwatch's slowdown tests.

Each step every rank computes a little, sleeps --step-ms (its share of a real step), then
all-reduces its gradients, so the fast ranks wait in the collective for the slowest. Rank 0
prints "step N/100000" each step. After --steady seconds the last rank adds --extra-ms to
each of its steps: --mode busy spins (a slow device, a CPU-bound straggler), --mode sleep
sleeps (a starved data loader). --mode quota adds nothing itself: every rank spins --busy-ms
each step, and the test puts the last rank under a CPU quota (a throttled device's analogue);
each rank prints its pid for that. The straggler prints "rank N: slowing down at T" (T: the
epoch) when it starts. --eval-every S pauses every rank --eval-seconds each S seconds, rank 0
printing "Running Evaluation" first (a clean run's announced evaluations); --hang-at S makes
the last rank sleep forever at S seconds, so the others block in all_reduce (a hang). The job
ends after --seconds.

usage: /usr/bin/python3 straggler.py [--ranks N] [--mode busy|sleep|quota] [--steady S]
           [--seconds S] [--step-ms MS] [--extra-ms MS] [--busy-ms MS] [--port P]
           [--eval-every S] [--eval-seconds S] [--hang-at S]
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
    told = False
    step_times = []  # its last steps' durations, for --ratio
    step_started = start
    next_eval = start + args.eval_every if args.eval_every > 0 else float("inf")
    while True:
        step += 1
        now = time.monotonic()
        if straggler and 0 < args.hang_at <= now - start:
            print(f"rank {rank}: hanging at {time.time():.3f}", flush=True)
            while True:
                time.sleep(1)
        if now >= next_eval:  # every rank's clock is close enough: they step together
            if rank == 0:
                print("Running Evaluation", flush=True)
            time.sleep(args.eval_seconds)
            next_eval = time.monotonic() + args.eval_every
        model.zero_grad()
        model(x).sum().backward()
        time.sleep(args.step_ms / 1000)
        spin(args.busy_ms)
        slowing = args.extra_ms > 0 or args.ratio > 0 or args.mode == "quota"
        if straggler and slowing and time.monotonic() >= slow_from:
            if not told:
                if args.ratio > 0:
                    mean = sum(step_times) / max(1, len(step_times))
                    args.extra_ms = (args.ratio - 1) * mean * 1000
                print(f"rank {rank}: slowing down at {time.time():.3f}"
                      f" (+{args.extra_ms:.1f} ms a step)", flush=True)
                told = True
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
        now = time.monotonic()
        if not told:
            step_times = (step_times + [now - step_started])[-200:]
        step_started = now
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
    p.add_argument("--ratio", type=float, default=0,
                   help="instead of --extra-ms: this many times its own mean step time so far")
    p.add_argument("--busy-ms", type=float, default=0)
    p.add_argument("--eval-every", type=float, default=0)
    p.add_argument("--eval-seconds", type=float, default=0)
    p.add_argument("--hang-at", type=float, default=0)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.port == 0:
        args.port = free_port()
    mp.spawn(worker, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
