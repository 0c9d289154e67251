#!/usr/bin/env python3
"""oom_killed.py: a tiny real PyTorch job that trains with a tqdm bar and then
dies from SIGKILL in the middle of the bar, printing nothing more.

Exists for trainwatch's integration tests: it ends the way a job killed by the
kernel's OOM killer does: the log stops mid-bar (no newline, no traceback) and
the process exits by signal 9 (a shell reports status 137). With --segfault it
dies of a real invalid memory read instead (what a bad native extension does):
signal 11, and again nothing printed (faulthandler is off by default).
With --log PATH it appends its output to PATH itself, not to stdout. With
--unreaped-for S the trainer is the child of a launcher that does not reap it for
S seconds: the killed trainer stays a zombie that long, as a rank does under a
launcher that is busy or stuck (or under a container's init that reaps nothing).
The launcher prints the trainer's pid on its stdout; only the trainer opens the log.

usage: /usr/bin/python3 oom_killed.py [--steps N] [--kill-at K] [--step-seconds S]
                                      [--segfault] [--log PATH]
                                      [--unreaped-for S]
"""
import argparse
import ctypes
import os
import signal
import sys
import time

import torch
from tqdm import tqdm


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--kill-at", type=int, default=15)
    p.add_argument("--step-seconds", type=float, default=0.05)
    p.add_argument("--segfault", action="store_true", help="die of SIGSEGV, not SIGKILL")
    p.add_argument("--log", help="append the output to this file, not to stdout")
    p.add_argument("--unreaped-for", type=float, default=0,
                   help="train in a child that the launcher leaves unreaped this long")
    args = p.parse_args()
    if args.unreaped_for > 0:
        trainer = os.fork()
        if trainer != 0:
            print(f"launcher: trainer pid {trainer}", flush=True)
            time.sleep(args.unreaped_for)
            return
    if args.log:
        log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    print(f"starting training: {args.steps} steps", flush=True)
    # stderr is a file, not a tty, so tqdm writes \r-separated refreshes.
    for step in tqdm(range(args.steps), desc="Epoch 0", file=sys.stderr, mininterval=0):
        if step == args.kill_at:
            if args.segfault:
                ctypes.string_at(0)  # reads address 0: a real SIGSEGV from the kernel
            # What the OOM killer does: SIGKILL, no chance to print anything.
            os.kill(os.getpid(), signal.SIGKILL)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_seconds)


if __name__ == "__main__":
    main()
