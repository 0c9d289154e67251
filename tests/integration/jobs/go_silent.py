#!/usr/bin/env python3
"""go_silent.py: a tiny real PyTorch job that prints "step N loss X" for a few
steps and then goes completely silent forever (no progress bar, no output).

Exists for trainwatch's integration tests: it simulates a job that hung without
a word (e.g. deadlocked in a dataloader), so the daemon must flag a hang from
the silence of the log alone. It never exits: stop it with SIGKILL (or SIGTERM).

With --log PATH it prints to PATH, opened once the model is ready (as a job with a
logging.FileHandler set up after its imports does): a loaded machine may take seconds to
import torch, and a log that exists but stays empty that long is itself a silence.

With --pause-at N --pause-seconds S it stops for S seconds before step N and then goes on
(a stall that recovers: a slow filesystem, a straggler that caught up).

usage: /usr/bin/python3 go_silent.py [--steps N] [--step-seconds S] [--log PATH]
                                     [--pause-at N --pause-seconds S]
"""
import argparse
import sys
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--step-seconds", type=float, default=0.1)
    p.add_argument("--log", help="print to this file, opened after the setup")
    p.add_argument("--pause-at", type=int, default=-1)
    p.add_argument("--pause-seconds", type=float, default=0.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    out = open(args.log, "a", encoding="utf-8") if args.log else sys.stdout
    for step in range(args.steps):
        if step == args.pause_at:
            time.sleep(args.pause_seconds)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", file=out, flush=True)
        time.sleep(args.step_seconds)
    # The "deadlock": wait forever without printing anything.
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
