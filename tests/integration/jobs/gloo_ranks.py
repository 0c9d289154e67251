#!/usr/bin/env python3
"""gloo_ranks.py: a tiny real PyTorch DDP-style job of --ranks ranks (2 by
default; CPU, gloo backend, torch.multiprocessing.spawn) where the last rank
stops taking part after --stall-at steps. Only rank 0 draws a tqdm bar, as in
most real launchers.

Exists for trainwatch's integration tests of distributed hangs:
  --mode stall    the last rank sleeps forever (in time.sleep); the others
                  block in all_reduce (1 h gloo timeout), so the bar freezes at
                  --stall-at and the job hangs until it is killed.
  --mode timeout  same, but collectives use a --timeout-seconds gloo timeout:
                  rank 0's all_reduce raises gloo's real timeout RuntimeError,
                  mp.spawn terminates the others and re-raises in the parent, so the
                  log ends with a traceback and the job exits with status 1.

Stopping it: the ranks set PR_SET_PDEATHSIG=SIGKILL, so SIGKILL (or SIGTERM) to
the parent alone takes them down too; killing the whole process group (start
the job with setsid/setpgid) works as well and is the most robust.

usage: /usr/bin/python3 gloo_ranks.py --mode {stall,timeout} [--stall-at N]
           [--steps N] [--step-seconds S] [--timeout-seconds T] [--port P]
           [--ranks N]
"""
import os
import sys


def die_with_parent():
    """Make this spawned rank get SIGKILL when the parent dies (PR_SET_PDEATHSIG)."""
    import ctypes
    import signal
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != int(os.environ.get("GLOO_RANKS_PARENT", os.getppid())):
        os._exit(1)  # the parent died before prctl took effect


if __name__ == "__mp_main__":
    die_with_parent()  # before importing torch: keeps the orphan window tiny

import argparse
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from tqdm import tqdm


def worker(rank, args):
    # Again: mp.spawn's wrapper has just set PDEATHSIG to SIGINT, which a rank
    # blocked inside a gloo collective never acts on.
    die_with_parent()
    torch.set_num_threads(1)
    # Init with a generous timeout (rank start-up skew on a slow machine must
    # not trip it); the collectives run on a group with the mode's timeout.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=rank, world_size=args.ranks, timeout=timedelta(minutes=5))
    op_timeout = (timedelta(hours=1) if args.mode == "stall"
                  else timedelta(seconds=args.timeout_seconds))
    group = dist.new_group(ranks=list(range(args.ranks)), timeout=op_timeout)
    print(f"rank {rank}: process group ready (gloo, world_size {args.ranks})", flush=True)

    torch.manual_seed(rank)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    steps = range(args.steps)
    if rank == 0:  # only rank 0 shows progress; stderr is a file, so \r refreshes
        steps = tqdm(steps, desc="Epoch 0", file=sys.stderr, mininterval=0)
    for step in steps:
        if rank == args.ranks - 1 and step == args.stall_at:
            # The last rank "hangs" (think: stuck dataloader) and never joins the
            # next all_reduce. In timeout mode it gives up after a bounded
            # while in case nobody terminates it.
            deadline = time.time() + (3 * args.timeout_seconds
                                      if args.mode == "timeout" else float("inf"))
            while time.time() < deadline:
                time.sleep(0.5)
            os._exit(0)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():  # what DDP does: average the gradients
            dist.all_reduce(p.grad, group=group)
            p.grad /= args.ranks
        opt.step()
        time.sleep(args.step_seconds)
    print(f"rank {rank}: done, loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["stall", "timeout"], required=True)
    p.add_argument("--stall-at", type=int, default=10)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-seconds", type=float, default=0.05)
    p.add_argument("--timeout-seconds", type=float, default=3)
    p.add_argument("--port", type=int, default=0, help="default: a free port")
    p.add_argument("--ranks", type=int, default=2)
    args = p.parse_args()
    args.port = args.port or free_port()
    os.environ["GLOO_RANKS_PARENT"] = str(os.getpid())
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # no hostname-lookup warning
    print(f"launching {args.ranks} ranks (mode {args.mode}, port {args.port})", flush=True)
    mp.spawn(worker, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
