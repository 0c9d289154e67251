#!/usr/bin/python3
"""Writes a large, realistic training log twice: healthy.log, and failing.log, which is the
same text with rare real failure lines injected at random places (their count is printed).

The text mixes what real jobs print: tqdm progress bars written to a file (many '\r'
updates per line), rank-prefixed INFO lines, HF Trainer metric dicts, NCCL INFO lines,
Python warnings, JSON metrics, checkpoint messages and benign lines that contain the words
'error' or 'failed' in harmless ways.

usage: gen_log.py OUT_DIR SIZE_MIB
"""
import json
import os
import random
import sys

rng = random.Random(20261121)


def tqdm_line(total):
    """One tqdm bar as written to a file: every refresh starts with '\r'."""
    n0 = rng.randrange(total)
    parts = []
    for n in range(n0, min(total, n0 + rng.randrange(20, 120))):
        pct = 100 * n // total
        bar = ("█" * (pct // 10)).ljust(10)
        parts.append(f"\rEpoch {rng.randrange(10)}: {pct:3d}%|{bar}| {n}/{total} "
                     f"[{n // 60:02d}:{n % 60:02d}<{(total - n) // 60:02d}:{(total - n) % 60:02d}, "
                     f"{rng.uniform(1, 9):.2f}it/s, loss={rng.uniform(0.1, 3):.3f}, v_num=0]")
    return "".join(parts) + "\n"


def line():
    rank = rng.randrange(8)
    step = rng.randrange(1, 200000)
    ts = f"2026-11-{rng.randrange(1, 28):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d},{rng.randrange(1000):03d}"
    kind = rng.randrange(100)
    if kind < 8:
        return tqdm_line(rng.choice([61, 903, 3666, 30033]))
    if kind < 30:
        return (f"[rank{rank}]: {ts} - INFO - trainer - step {step} loss={rng.uniform(0.1, 3):.4f} "
                f"lr={rng.uniform(1e-6, 1e-4):.3e} tokens/s={rng.randrange(1000, 90000)}\n")
    if kind < 45:
        return str({"loss": round(rng.uniform(0.1, 3), 4), "grad_norm": rng.uniform(0.1, 90),
                    "learning_rate": rng.uniform(1e-6, 1e-4), "epoch": round(rng.uniform(0, 3), 2),
                    "memory_allocated (GB)": round(rng.uniform(10, 90), 2),
                    "max_memory_allocated (GB)": round(rng.uniform(10, 94), 2)}) + "\n"
    if kind < 55:
        return json.dumps({"step": step, "train/loss": rng.uniform(0.1, 3), "eval/error_rate":
                           rng.uniform(0, 0.2), "throughput": rng.uniform(100, 900)}) + "\n"
    if kind < 65:
        return (f"gpu{rng.randrange(100, 300)}:{rng.randrange(1000, 9999)}:{rng.randrange(1000, 9999)} "
                f"[{rank}] NCCL INFO Channel {rng.randrange(32):02d}/0 : {rank}[{rank}] -> "
                f"{(rank + 1) % 8}[{(rank + 1) % 8}] via P2P/IPC/read\n")
    if kind < 72:
        return (f"{ts} - WARNING - torch.utils.checkpoint - UserWarning: torch.utils.checkpoint: "
                f"the use_reentrant parameter should be passed explicitly.\n")
    if kind < 77:
        return (f"/opt/venv/lib/python3.11/site-packages/transformers/trainer.py:{rng.randrange(100, 4000)}: "
                f"FutureWarning: `tokenizer` is deprecated and will be removed in version 5.0.0.\n")
    if kind < 82:
        return (f"[{ts}] [INFO] [logging.py:96:log_dist] [Rank {rank}] step={step}, skipped=0, "
                f"lr=[{rng.uniform(1e-6, 1e-4):.6e}], mom=[(0.9, 0.95)]\n")
    if kind < 86:
        return (f"{step}/{step + rng.randrange(100)} [==============================] - "
                f"{rng.randrange(1, 300)}s {rng.randrange(1, 900)}ms/step - loss: {rng.uniform(0.1, 3):.4f} "
                f"- mean_squared_error: {rng.uniform(0, 0.01):.4f}\n")
    if kind < 90:
        return f"{ts} INFO Saving model checkpoint to out/checkpoint-{step}; 0 errors, 0 failed writes\n"
    if kind < 94:
        return (f"[{ts[11:19]}.{rng.randrange(999999):06d}][SYN_API       ][info ][tid:{rng.randrange(65535):X}] "
                f"synLaunch: recipe {rng.randrange(99999)} launched\n")
    if kind < 97:
        return f"(RayTrainWorker pid={rng.randrange(10000, 99999)}) Epoch {rng.randrange(10)}: validation accuracy {rng.uniform(0.5, 1):.4f}\n"
    return "\n"


# Real failure lines (one per rule family) for failing.log.
FAILURES = [
    "[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU 1 has a total capacity of 79.32 GiB\n",
    "RuntimeError: [Rank:7] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::2123366400 (2025)MB\n",
    "Segmentation fault (core dumped)\n",
    "EZ9999: Inner Error!\n",
]


def main():
    out_dir, size_mib = sys.argv[1], int(sys.argv[2])
    target = size_mib << 20
    os.makedirs(out_dir, exist_ok=True)
    # A pool of distinct blocks, written in random order: varied text at disk speed.
    blocks = []
    for _ in range(48):
        parts, size = [], 0
        while size < (1 << 20):
            text = line()
            parts.append(text)
            size += len(text.encode())
        blocks.append("".join(parts).encode())
    injected = 0
    written = 0
    every = max(1, target // (len(FAILURES) * 4 * (1 << 20)))  # ~20 failures per file
    with open(os.path.join(out_dir, "healthy.log"), "wb") as healthy, \
            open(os.path.join(out_dir, "failing.log"), "wb") as failing:
        i = 0
        while written < target:
            block = rng.choice(blocks)
            healthy.write(block)
            failing.write(block)
            written += len(block)
            i += 1
            if i % every == 0:
                failing.write(FAILURES[injected % len(FAILURES)].encode())
                injected += 1
    print(injected)


if __name__ == "__main__":
    main()
