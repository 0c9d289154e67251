#!/usr/bin/env python3
"""crash_after_training.py: a tiny real PyTorch job that trains with a tqdm bar
and then crashes with an uncaught RuntimeError from a real tensor shape mismatch.

Exists for trainwatch's integration tests: the daemon tails this job's log
(stdout+stderr redirected to a file) and must report a crash whose traceback
ends with "RuntimeError: mat1 and mat2 shapes cannot be multiplied ...".

usage: /usr/bin/python3 crash_after_training.py [--steps N] [--step-seconds S]
                                                [--crash-at K]
By default the crash comes after the bar reaches 100% (in an "evaluation" step);
with --crash-at K it comes inside the loop at step K, so the traceback follows
a bar that never finished. Exits with status 1 (Python's uncaught exception).
"""
import argparse
import sys
import time

import torch
from tqdm import tqdm


def train(steps, step_seconds, crash_at):
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    # stderr is a file, not a tty, so tqdm writes \r-separated refreshes.
    for step in tqdm(range(steps), desc="Epoch 0", file=sys.stderr, mininterval=0):
        if step == crash_at:
            x = torch.randn(32, 12)  # a malformed batch: wrong feature size
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(step_seconds)
    print(f"epoch 0 done, loss {loss.item():.4f}", flush=True)
    # The "bug": the evaluation batch has the wrong feature size, so the
    # Linear layer raises a real RuntimeError, left uncaught.
    eval_x = torch.randn(32, 12)
    model(eval_x)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-seconds", type=float, default=0.05)
    p.add_argument("--crash-at", type=int, default=-1,
                   help="crash inside the loop at this step (default: after it)")
    args = p.parse_args()
    torch.set_num_threads(1)
    print(f"starting training: {args.steps} steps", flush=True)
    train(args.steps, args.step_seconds, args.crash_at)


if __name__ == "__main__":
    main()
