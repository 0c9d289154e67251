#!/usr/bin/env python3
"""flight_recorder_rank.py: one rank that answers PyTorch's Flight Recorder protocol, for
trainwatch's tests (Debian 12's torch 1.13 has no Flight Recorder pipe).

It re-executes itself with the environment a Flight Recorder rank has, so that
/proc/PID/environ shows it: RANK=0, TORCH_NCCL_TRACE_BUFFER_SIZE=2000,
TORCH_NCCL_DEBUG_INFO_PIPE_FILE=<dir>/pipe_ and TORCH_NCCL_DEBUG_INFO_TEMP_FILE=<dir>/trace_.
Then, as ProcessGroupNCCL does, it makes the FIFO <dir>/pipe_0.pipe, opens it for reading
without blocking and polls it; on any write it dumps a pickled trace (the shape of a real one:
version, pg_config, entries) to <dir>/trace_0, and goes on waiting.

usage: /usr/bin/python3 flight_recorder_rank.py DIR
"""
import os
import pickle
import sys
import time

directory = sys.argv[1]
if os.environ.get("RANK") != "0":
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", TORCH_NCCL_TRACE_BUFFER_SIZE="2000",
               TORCH_NCCL_DEBUG_INFO_PIPE_FILE=os.path.join(directory, "pipe_"),
               TORCH_NCCL_DEBUG_INFO_TEMP_FILE=os.path.join(directory, "trace_"))
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + "0.pipe"
if os.path.exists(pipe):
    os.unlink(pipe)
os.mkfifo(pipe)
fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
print("flight recorder rank 0 listening", flush=True)
while True:
    try:
        data = os.read(fd, 4096)
    except BlockingIOError:
        data = b""
    if data:
        trace = {"version": "2.1", "pg_config": {"0": {"name": "0", "ranks": "[0]"}},
                 "entries": [{"record_id": 7, "profiling_name": "nccl:all_reduce",
                              "state": "scheduled", "collective_seq_id": 42}]}
        with open(os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + "0", "wb") as out:
            pickle.dump(trace, out)
    time.sleep(0.05)
