#!/usr/bin/env python3
"""two_node_ranks.py: one "node" of a real PyTorch job spread over several nodes
(CPU, gloo): run it once per node with the same --port and --run-id and that
node's --node-rank. Each run starts --local-ranks rank processes the way
torchrun does: RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and
TORCHELASTIC_RUN_ID in each one's environment, and every line a rank prints to
stderr prefixed "[rankN]:" (torchrun's log line prefix).

Exists for trainwatch's integration tests of one job across nodes:
--crash-rank R raises a RuntimeError in rank R at --crash-at steps, after
starting a non-daemon thread that never ends: the traceback is printed, and
the process then hangs at interpreter exit waiting for that thread (a common
way real ranks fail), holding its connections open, so the other ranks block
in all_reduce (1 h gloo timeout) instead of failing fast. With --crash-exits the
rank raises a ValueError and exits instead: every other rank, on every node,
then fails on gloo ("Connection closed by peer"), the consequence printed after
the cause. No progress bar: a stalled bar must not be what the other nodes
detect, unless --print-steps asks rank 0 to print "step N" lines (a pace to
follow). --slow-after S --slow-ms MS makes every rank of this node compute MS
ms more a step from step S on (a busy loop: its CPUs throttled, its devices
slow), so that the whole job slows and the other nodes' ranks wait for this
node's.

Stopping it: the ranks set PR_SET_PDEATHSIG=SIGKILL; kill the launcher's
process group (start it with setsid/setpgid).

usage: /usr/bin/python3 two_node_ranks.py --node-rank N --nodes N
           --local-ranks N --port P --run-id ID [--crash-rank R] [--crash-at N]
           [--crash-exits] [--print-steps] [--slow-after S --slow-ms MS]
"""
import os
import sys

if __name__ == "__mp_main__":
    import ctypes
    import signal
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != int(os.environ.get("TWO_NODE_PARENT", os.getppid())):
        os._exit(1)  # the launcher died before prctl took effect

import argparse
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Prefixed:
    """Writes each line with torchrun's "[rankN]:" prefix."""

    def __init__(self, stream, rank):
        self.stream, self.prefix, self.at_line_start = stream, f"[rank{rank}]:", True

    def write(self, text):
        out = []
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                out.append(self.prefix)
            out.append(piece)
            self.at_line_start = piece.endswith("\n")
        self.stream.write("".join(out))
        self.stream.flush()

    def flush(self):
        self.stream.flush()


def worker(args):
    rank = int(os.environ["RANK"])
    sys.stderr = Prefixed(sys.__stderr__, rank)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=rank, world_size=int(os.environ["WORLD_SIZE"]),
                            timeout=timedelta(minutes=5))
    group = dist.new_group(ranks=list(range(int(os.environ["WORLD_SIZE"]))),
                           timeout=timedelta(hours=1))
    print(f"rank {rank}: process group ready on node {os.environ['GROUP_RANK']}",
          file=sys.stderr)
    torch.manual_seed(rank)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 16), torch.randn(32, 4)
    for step in range(args.steps):
        if rank == args.crash_rank and step == args.crash_at and args.crash_exits:
            raise ValueError(f"bad batch at step {step}")
        if rank == args.crash_rank and step == args.crash_at:
            threading.Thread(target=lambda: time.sleep(3600), name="stuck-loader").start()
            raise RuntimeError(f"rank {rank}: corrupted batch at step {step}")
        if args.slow_after >= 0 and step >= args.slow_after:
            spin_until = time.monotonic() + args.slow_ms / 1000
            while time.monotonic() < spin_until:
                pass
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad, group=group)
            p.grad /= int(os.environ["WORLD_SIZE"])
        opt.step()
        if args.print_steps and rank == 0:
            print(f"step {step} loss {loss.item():.4f}", file=sys.stderr)
        time.sleep(args.step_seconds)
    print(f"rank {rank}: done", file=sys.stderr)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--node-rank", type=int, required=True)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--local-ranks", type=int, default=2)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--crash-rank", type=int, default=-1)
    p.add_argument("--crash-at", type=int, default=5)
    p.add_argument("--crash-exits", action="store_true")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--step-seconds", type=float, default=0.1)
    p.add_argument("--print-steps", action="store_true")
    p.add_argument("--slow-after", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=0)
    args = p.parse_args()
    os.environ.update({"TWO_NODE_PARENT": str(os.getpid()), "GLOO_SOCKET_IFNAME": "lo",
                       "TORCHELASTIC_RUN_ID": args.run_id, "GROUP_RANK": str(args.node_rank),
                       "WORLD_SIZE": str(args.nodes * args.local_ranks),
                       "LOCAL_WORLD_SIZE": str(args.local_ranks)})
    print(f"node {args.node_rank}: launching {args.local_ranks} ranks (port {args.port})",
          flush=True)
    context = mp.get_context("spawn")
    ranks = []
    for local_rank in range(args.local_ranks):
        # A spawned process starts with the environment of the moment: each its own RANK.
        os.environ.update({"LOCAL_RANK": str(local_rank),
                           "RANK": str(args.node_rank * args.local_ranks + local_rank)})
        process = context.Process(target=worker, args=(args,))
        process.start()
        ranks.append(process)
    for process in ranks:
        process.join()


if __name__ == "__main__":
    main()
