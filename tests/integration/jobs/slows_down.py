"""A training loop that slows down and recovers, for the pace rules.

Prints "step N/1000" lines: at 20 steps a second for --steady seconds, then at 6 a second
(a straggler, a throttled device) for --slow seconds, then at 20 a second again for --after
seconds, then exits 0. No torch: what is measured is the pace of the lines.

usage: /usr/bin/python3 slows_down.py [--steady S] [--slow S] [--after S]
"""

import argparse
import sys
import time


def run(seconds, per_second, step):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        step += 1
        print(f"step {step}/1000", flush=True)
        time.sleep(1.0 / per_second)
    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steady", type=float, default=10)
    p.add_argument("--slow", type=float, default=8)
    p.add_argument("--after", type=float, default=10)
    args = p.parse_args()
    step = run(args.steady, 20, 0)
    print("slowing down", file=sys.stderr, flush=True)
    step = run(args.slow, 6, step)
    print("back to pace", file=sys.stderr, flush=True)
    run(args.after, 20, step)


if __name__ == "__main__":
    main()
