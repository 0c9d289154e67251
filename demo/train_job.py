#!/usr/bin/env python3
"""train_job.py: trainwatch's demo job (see README). Trains a tiny PyTorch
model on CPU for about 4 seconds with a tqdm bar, logging the loss now and
then, and then crashes in its validation step with a real, uncaught
RuntimeError (a shape mismatch), the way a buggy training script does.

Run it with its output sent to a log file that trainwatch tails, e.g.
    /usr/bin/python3 demo/train_job.py > train.log 2>&1
It needs PyTorch and tqdm (Debian: apt-get install python3-torch python3-tqdm);
without them it prints one line to stderr and exits with status 2.

usage: train_job.py [--steps N] [--step-seconds S]
"""
import argparse
import sys
import time

try:
    import torch
    from tqdm import tqdm
except ImportError:
    print("demo: PyTorch not found (apt-get install python3-torch python3-tqdm)",
          file=sys.stderr)
    sys.exit(2)


def validate(model):
    # The bug: the validation set was built with 12 features instead of 16.
    val_x = torch.randn(8, 12)
    return model(val_x).argmax(dim=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-seconds", type=float, default=0.1)
    args = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each log line reaches the file at once
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    print(f"training: {args.steps} steps, lr 0.1, batch 64", flush=True)
    # stderr is a file, not a tty, so tqdm writes \r-separated refreshes.
    bar = tqdm(range(args.steps), desc="Epoch 0", file=sys.stderr, mininterval=0)
    for step in bar:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 10 == 0:
            bar.write(f"step {step + 1} loss {loss.item():.4f}", file=sys.stdout)
        time.sleep(args.step_seconds)
    print("epoch 0 done, running validation", flush=True)
    validate(model)


if __name__ == "__main__":
    main()
