"""Multi-rank gloo jobs that fail the ways real ones do, launched the way torchrun does.

The launcher (this script without --worker) starts --ranks workers, each a process of its
own with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, whose stdout and
stderr go to LOG_DIR/rank<N>.log (what torchrun's --redirects writes: one log per rank, the
rank its only writer). Like torchrun's --tee it copies every line of them to its own stdout
with a "[rank<N>]:" prefix (one log for all ranks). When a worker fails it says so as torchrun
does ("failed (exitcode: 1) local_rank: 2 ..."), stops the others with SIGTERM, and exits 1.
(Debian's torchrun cannot --tee under Python 3.11, so the launcher is this one.)

Scenarios:
  value_error  rank --culprit raises ValueError at step --at; its peers, inside all_reduce,
               fail on gloo ("Connection closed by peer") once its process is gone.
  value_error_lingers
               the same, but the culprit's process lingers after printing its traceback
               (a handler that catches, logs and never exits): its peers hang in all_reduce,
               as NCCL's do, until the job is killed.
  mismatch     rank --culprit calls broadcast at step --at while its peers call all_reduce:
               every rank hangs until the job is killed.
  dataloader   rank --culprit feeds its steps from a DataLoader with 2 workers whose dataset's
               __getitem__ blocks at item --at: the rank waits for its workers, its peers
               hang in all_reduce, until the job is killed.
  lock         rank --culprit's main thread blocks at step --at on a threading.Lock it
               already holds (log_metrics calls itself under the lock); its peers hang in
               all_reduce until the job is killed.
  killed       rank --culprit drops its own loopback traffic (iptables on its ports) and
               SIGKILLs itself at step --at: no FIN or RST reaches its peers, which hang in
               all_reduce as NCCL's do. The launcher keeps the survivors running, as srun
               does without --kill-on-bad-exit, until the job is killed.
  partition    rank --culprit drops its own loopback traffic at step --at and goes on: every
               rank hangs in the same all_reduce, none out of step, none gone (a network
               fault).
  missing      only ranks below --culprit are started (WORLD_SIZE stays --ranks): they wait in
               init_process_group's rendezvous for ranks that never come, printing nothing.
The iptables rules carry the comment "trainwatch-rank-failures-<tag>", the tag named for
LOG_DIR, so that jobs run side by side (ctest -j) never remove each other's rules; the
launcher removes its own when it ends (and --drop-rules does, for a launcher that was killed).

With --python-hook DIR (trainwatch's daemon/python), the ranks load trainwatch's Python hook,
as `wrap` would give it: their stacks are written on a signal into LOG_DIR/stacks.

usage: /usr/bin/python3 rank_failures.py --scenario value_error --log-dir DIR
           [--ranks N] [--culprit R] [--at STEP] [--python-hook DIR]
       /usr/bin/python3 rank_failures.py --drop-rules --log-dir DIR
"""
import argparse
import hashlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback


class Metrics:
    def __init__(self):
        self.lock = threading.Lock()
        self.logged = 0

    def log_metrics(self, step, again=True):
        with self.lock:
            self.logged += 1
            if again:
                self.log_metrics(step, again=False)  # takes the lock it holds: blocks


class StuckDataset:
    """A dataset whose item `stuck_at` never comes: a read from storage that went away."""

    def __init__(self, stuck_at):
        self.stuck_at = stuck_at

    def __len__(self):
        return 100000

    def __getitem__(self, index):
        if index == self.stuck_at:
            while True:
                time.sleep(1)
        return index


def rule_comment(log_dir):
    """The comment on this job's iptables rules: one job's cleanup leaves another's alone."""
    tag = hashlib.sha1(os.path.abspath(log_dir).encode()).hexdigest()[:16]
    return f"trainwatch-rank-failures-{tag}"


def own_tcp_ports():
    """The local ports of this process's TCP sockets (/proc/self/fd's sockets in net/tcp*)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def drop_own_traffic(log_dir):
    """Every packet to or from this process's sockets is dropped on loopback, its close too."""
    for port in own_tcp_ports():
        for direction in ("--dport", "--sport"):
            # -w: another job's iptables may hold the xtables lock meanwhile.
            subprocess.run(["iptables", "-w", "-I", "INPUT", "-i", "lo", "-p", "tcp", direction,
                            str(port), "-m", "comment", "--comment", rule_comment(log_dir),
                            "-j", "DROP"], check=True)


def drop_rules(log_dir):
    """Removes every rule drop_own_traffic added for the job writing into log_dir."""
    comment = rule_comment(log_dir)
    listed = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True,
                            text=True).stdout
    for rule in listed.splitlines():
        words = shlex.split(rule)  # iptables -S quotes the comment
        if rule.startswith("-A ") and comment in words:
            subprocess.run(["iptables", "-w", "-D"] + words[1:], check=False)


def batches(args, rank):
    if args.scenario != "dataloader" or rank != args.culprit:
        return None
    from torch.utils.data import DataLoader
    return iter(DataLoader(StuckDataset(args.at), batch_size=1, num_workers=2))


def die_with_parent():
    """SIGKILL when the launcher dies (PR_SET_PDEATHSIG), as torchrun's workers would be."""
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(1)  # the launcher died before prctl took effect


def worker(args):
    die_with_parent()
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    print(f"rank {rank}: process group ready (gloo, world_size {dist.get_world_size()})",
          flush=True)
    tensor = torch.ones(1024)
    metrics = Metrics()
    loader = batches(args, rank)
    for step in range(1000):
        if loader is not None:
            next(loader)
        if rank == args.culprit and step == args.at:
            if args.scenario == "mismatch":
                dist.broadcast(tensor, src=0)
                continue
            if args.scenario == "lock":
                metrics.log_metrics(step)
            if args.scenario in ("killed", "partition"):
                drop_own_traffic(args.log_dir)
                print(f"rank {rank}: traffic dropped at step {step}", flush=True)
                if args.scenario == "killed":
                    os.kill(os.getpid(), signal.SIGKILL)
        if args.scenario.startswith("value_error") and rank == args.culprit and step == args.at:
            if args.scenario == "value_error":
                raise ValueError(f"bad batch at step {step}")
            try:
                raise ValueError(f"bad batch at step {step}")
            except ValueError:
                traceback.print_exc()
                sys.stderr.flush()
                while True:
                    time.sleep(1)
        dist.all_reduce(tensor)
        # Every step where the test waits for a real hang: a slow machine's pause between
        # lines must not look like one.
        if step % 5 == 0 or args.scenario in ("killed", "partition"):
            print(f"rank {rank}: step {step}", flush=True)
        time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tee(rank, path, done):
    """Copies the lines of `path` to stdout with torchrun's prefix until `done` and EOF."""
    with open(path, "rb") as log:
        pending = b""
        while True:
            chunk = log.read(65536)
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    sys.stdout.buffer.write(b"[rank%d]: " % rank + line + b"\n")
                sys.stdout.flush()
            elif done.is_set():
                return
            else:
                time.sleep(0.02)


def launch(args):
    os.makedirs(args.log_dir, exist_ok=True)
    port = free_port()
    print(f"launching {args.ranks} ranks (scenario {args.scenario}, port {port})", flush=True)
    workers, tees, done = [], [], threading.Event()
    started = args.culprit if args.scenario == "missing" else args.ranks
    for rank in range(started):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.ranks),
                   LOCAL_WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        if args.python_hook:
            stacks = os.path.join(args.log_dir, "stacks")
            os.makedirs(stacks, exist_ok=True)
            env.update(PYTHONPATH=args.python_hook, TRAINWATCH_STACKS_DIR=stacks,
                       TRAINWATCH_STACKS_SIGNAL=str(signal.SIGRTMIN + 3))
        path = os.path.join(args.log_dir, f"rank{rank}.log")
        with open(path, "ab") as log:
            workers.append(subprocess.Popen(
                [sys.executable, __file__, "--worker"] + sys.argv[1:],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        thread = threading.Thread(target=tee, args=(rank, path, done), daemon=True)
        thread.start()
        tees.append(thread)
    try:
        return supervise(args, workers, tees, done)
    finally:
        drop_rules(args.log_dir)


def supervise(args, workers, tees, done):
    failed = None
    keep_going = args.scenario in ("killed", "missing")  # srun without --kill-on-bad-exit
    while failed is None and any(w.poll() is None for w in workers):
        if keep_going:
            time.sleep(0.05)
            continue
        for rank, w in enumerate(workers):
            if w.poll() not in (None, 0):
                failed = rank
                break
        time.sleep(0.05)
    if failed is not None:
        time.sleep(1.0)  # torchrun's monitor interval: the peers report meanwhile
        w = workers[failed]
        print(f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: "
              f"{w.returncode}) local_rank: {failed} (pid: {w.pid}) of binary: {sys.executable}",
              flush=True)
        for rank, other in enumerate(workers):
            if other.poll() is None:
                print(f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process "
                      f"{other.pid} closing signal SIGTERM", flush=True)
                other.send_signal(signal.SIGTERM)
    for w in workers:
        w.wait()
    done.set()
    for thread in tees:
        thread.join()
    return 1 if failed is not None else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario",
                   choices=["value_error", "value_error_lingers", "mismatch", "lock", "dataloader",
                            "killed", "partition", "missing"])
    p.add_argument("--log-dir")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--culprit", type=int, default=2)
    p.add_argument("--at", type=int, default=20)
    p.add_argument("--worker", action="store_true")
    p.add_argument("--drop-rules", action="store_true")
    p.add_argument("--python-hook", help="trainwatch's hook folder (daemon/python) to load")
    args = p.parse_args()
    if args.drop_rules:
        if not args.log_dir:
            p.error("--drop-rules needs the job's --log-dir")
        drop_rules(args.log_dir)
        return 0
    if not args.scenario or not args.log_dir:
        p.error("--scenario and --log-dir are required")
    if args.worker:
        worker(args)
        return 0
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
