#!/usr/bin/env python3
"""loss_goes_nan.py: a tiny real PyTorch job whose loss turns NaN and stays NaN while it
trains on, printing "step N | loss = X" each step (the run goes on, as a diverged run does:
nothing crashes, nothing stalls).

Exists for trainwatch's integration tests: from step --nan-at the loss is multiplied by
float('nan') before backward, so the weights become NaN too and every later loss is NaN.
With --overflow-at N the job prints, at step N, what DeepSpeed prints for an fp16 overflow
step the loss scaler skips ("OVERFLOW! ... Skipping step ... loss: nan"), and goes on with a
finite loss. It runs --steps steps, then exits 0.

usage: /usr/bin/python3 loss_goes_nan.py [--nan-at N] [--overflow-at N] [--steps N]
                                         [--step-seconds S]
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nan-at", type=int, default=-1)
    p.add_argument("--overflow-at", type=int, default=-1)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-seconds", type=float, default=0.05)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    for step in range(args.steps):
        loss = torch.nn.functional.mse_loss(model(x), y)
        if args.nan_at >= 0 and step >= args.nan_at:
            loss = loss * float("nan")
        if step == args.overflow_at:
            print(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, "
                  f"reducing to 32768, loss: nan", flush=True)
            time.sleep(args.step_seconds)
            continue
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} | loss = {loss.item():.4f}", flush=True)
        time.sleep(args.step_seconds)


if __name__ == "__main__":
    main()
