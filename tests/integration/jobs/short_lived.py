#!/usr/bin/env python3
"""short_lived.py: a tiny real PyTorch job with a tqdm bar that ends within a second of its
first line, by death or normally.

Exists for trainwatch's integration tests: a job killed that soon may end before any /proc
scan of the daemon saw it write its log, and a job that ends normally must not look like one
that died.

  --mode killed    SIGKILLs itself (what the OOM killer does) 0.3 s after its first line,
                   mid-bar: the log ends in an unfinished bar refresh
  --mode no-total  a bar with no total ("processing: 29it"), then exit 0
  --mode early     a loop over 100000 steps that stops at 125, then exit 0
  --mode bare-exception
                   a few steps, then only the exception's line, no traceback (what a log
                   often keeps of a crash: a handler that logs str(e), or an excerpt), exit 1
  --mode survives  the same line, then the job goes on with more steps and exits 0

The log is opened once torch is imported (a FileHandler set up after the imports): the
daemon learns of the file only then, as with a real job.

usage: /usr/bin/python3 short_lived.py --mode MODE --log PATH
"""
import argparse
import os
import signal
import time

import torch
from tqdm import tqdm


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["killed", "no-total", "early", "bare-exception", "survives"],
                   required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    log = open(args.log, "a", encoding="utf-8")
    print(f"starting: {args.mode}", file=log, flush=True)
    first_line = time.monotonic()
    if args.mode == "killed":
        for _ in tqdm(range(1000), desc="Epoch 0", file=log, mininterval=0):
            train_step(model, opt, x, y)
            time.sleep(0.02)
            if time.monotonic() - first_line >= 0.3:
                os.kill(os.getpid(), signal.SIGKILL)  # no chance to print anything
    elif args.mode == "no-total":
        batches = (i for i in range(29))  # a generator: tqdm knows no total
        for _ in tqdm(batches, desc="processing", file=log, mininterval=0):
            train_step(model, opt, x, y)
            time.sleep(0.01)
    elif args.mode in ("bare-exception", "survives"):
        for step in range(5):
            train_step(model, opt, x, y)
            print(f"step {step} done", file=log, flush=True)
            time.sleep(0.05)
        print("AssertionError: batch size 30 != 32", file=log, flush=True)
        if args.mode == "bare-exception":
            time.sleep(0.5)
            log.close()
            return 1
        for step in range(5, 10):
            time.sleep(0.05)
            print(f"step {step} done", file=log, flush=True)
    else:
        for step in tqdm(range(100000), desc="Epoch 0", file=log, mininterval=0):
            if step == 125:
                break  # early stopping
            train_step(model, opt, x, y)
    log.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
