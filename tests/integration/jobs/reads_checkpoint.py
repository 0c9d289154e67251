"""A rank that loads its data, then its checkpoint, from a network file system
(tests/integration/blocking_fs.py): says it starts, reads every byte of MOUNT/shard.bin (a slow
server, each read answered after a delay: short waits in the kernel, each ended by an answer),
says so, then reads MOUNT/checkpoint.pt (a server that stopped answering: it waits in the kernel
until the test lets the server answer), and says so. Runs as rank RANK (default 0), with RANK in
its environment from the start, where the daemon reads it.

Usage: reads_checkpoint.py MOUNT [RANK]"""
import os
import sys
import time

rank = sys.argv[2] if len(sys.argv) > 2 else "0"
if os.environ.get("RANK") != rank:
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, RANK=rank))

mount = sys.argv[1]
print("loading the data", flush=True)
time.sleep(3)  # the daemon finds this log's writer
with open(os.path.join(mount, "shard.bin"), "rb") as shard:
    print(f"shard read: {len(shard.read())} bytes", flush=True)
with open(os.path.join(mount, "checkpoint.pt"), "rb") as checkpoint:
    print(f"checkpoint read: {len(checkpoint.read())} bytes", flush=True)
