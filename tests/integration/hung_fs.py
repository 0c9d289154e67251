#!/usr/bin/python3
"""A file system that hangs, as an NFS server that stopped answering does: jobs/jobA/ lists one
peer record, and reading it never returns; dump_0 (where a rank's Flight Recorder would dump)
is a file whose opening never returns. The kernel then holds the
reader in the read (a FUSE request waits for its answer; only a fatal signal ends the wait), which
is what wedges a daemon's worker. When a read arrives, the file named second on the command line
is created, so the test knows the worker is stuck now.

Usage: hung_fs.py MOUNTPOINT IN_READ_MARKER (foreground; unmount to end it)."""
import errno
import stat
import sys
import time

from fusepy import FUSE, FuseOSError, Operations

DIRECTORIES = {"/": ["jobs", "dump_0"], "/jobs": ["jobA"], "/jobs/jobA": ["x@node9.json"]}
RECORD = "/jobs/jobA/x@node9.json"
DUMP = "/dump_0"


class HungFileSystem(Operations):
    def __init__(self, marker):
        self.marker = marker

    def getattr(self, path, fh=None):
        now = time.time()
        times = {"st_atime": now, "st_mtime": now, "st_ctime": now}
        if path in DIRECTORIES:
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, **times)
        if path in (RECORD, DUMP):
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=100, **times)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", ".."] + DIRECTORIES.get(path, [])

    def open(self, path, flags):
        if path == DUMP:
            self.hang()
        return 0

    def read(self, path, size, offset, fh):
        self.hang()

    def hang(self):
        with open(self.marker, "w"):
            pass
        while True:  # the server never answers
            time.sleep(3600)


if __name__ == "__main__":
    FUSE(HungFileSystem(sys.argv[2]), sys.argv[1], foreground=True, nothreads=False)
