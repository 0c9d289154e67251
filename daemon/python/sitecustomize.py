"""trainwatch's Python hook: every thread's stack, on a signal, into a file trainwatch reads.

Python imports `sitecustomize` at start-up from the first folder of sys.path that has one;
`trainwatch wrap` puts this file's folder first on PYTHONPATH, so every interpreter of the job
loads it, the ranks a launcher starts included (torchrun, mp.spawn and the like exec a new
interpreter with the same environment), without a change to the job's code. What it does:

- With TRAINWATCH_STACKS_DIR set (and TRAINWATCH_PYTHON_HOOK not "0"), it opens
  <dir>/<pid>.stacks and registers the standard library's faulthandler on the signal
  TRAINWATCH_STACKS_SIGNAL (a number; trainwatch uses SIGRTMIN+3, which no common library
  handles): on that signal the interpreter writes the stack of every thread there, from the
  signal handler, without the GIL and without stopping the job.
- It chains: a handler that was already there is called after the dump; and the next
  sitecustomize on sys.path (the image's own) is loaded after this one, as if this one were
  not there.
- A process forked from a hooked one (a DataLoader worker) inherits the handler and the file;
  trainwatch signals the ranks only.

Anything that goes wrong here is swallowed: a job must never fail because of its watcher.
"""
import os
import sys


def _register_stacks_hook():
    directory = os.environ.get("TRAINWATCH_STACKS_DIR", "")
    if not directory or os.environ.get("TRAINWATCH_PYTHON_HOOK", "1") == "0":
        return
    import faulthandler
    import signal

    signum = int(os.environ.get("TRAINWATCH_STACKS_SIGNAL", "0"))
    if signum <= 0:
        return
    stacks = open(os.path.join(directory, f"{os.getpid()}.stacks"), "a")
    # The default action of a real-time signal is to terminate: chain only to a handler that
    # is there (None: one installed by C code, not Python).
    previous = signal.getsignal(signum)
    chain = previous not in (signal.SIG_DFL, signal.SIG_IGN)
    faulthandler.register(signum, file=stacks, all_threads=True, chain=chain)
    # faulthandler keeps the descriptor, not the file object: keep that alive too.
    sys.modules[__name__].__dict__["_trainwatch_stacks_file"] = stacks


def _load_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _register_stacks_hook()
except Exception:  # noqa: BLE001 — see the module's last paragraph
    pass
try:
    _load_next_sitecustomize()
except Exception:  # noqa: BLE001
    pass
