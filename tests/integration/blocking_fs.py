#!/usr/bin/python3
"""A file system whose server stops answering for as long as a test says, as an NFS or sshfs
server that went away does: /checkpoint.pt answers no read while CONTROL/hold exists (the
reader waits in the kernel, never woken), and /shard.bin answers each read only after
CONTROL/delay seconds (a slow but working server: the reader is woken at each answer). Each
read that arrives touches CONTROL/in_read_<name>.

Usage: blocking_fs.py MOUNTPOINT CONTROL (foreground; unmount to end it)."""
import errno
import os
import stat
import sys
import time

from fusepy import FUSE, FuseOSError, Operations

SIZE = 1 << 20
FILES = ("/checkpoint.pt", "/shard.bin")


class BlockingFileSystem(Operations):
    def __init__(self, control):
        self.control = control

    def getattr(self, path, fh=None):
        now = time.time()
        times = {"st_atime": now, "st_mtime": now, "st_ctime": now}
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, **times)
        if path in FILES:
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=SIZE, **times)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", ".."] + [name[1:] for name in FILES]

    def read(self, path, size, offset, fh):
        if path not in FILES:
            raise FuseOSError(errno.ENOENT)
        with open(os.path.join(self.control, "in_read_" + path[1:]), "w"):
            pass
        if path == "/checkpoint.pt":
            while os.path.exists(os.path.join(self.control, "hold")):
                time.sleep(0.1)
        else:
            try:
                with open(os.path.join(self.control, "delay")) as delay:
                    time.sleep(float(delay.read() or 0))
            except FileNotFoundError:
                pass
        end = min(offset + size, SIZE)
        return b"\0" * max(0, end - offset)


if __name__ == "__main__":
    FUSE(BlockingFileSystem(sys.argv[2]), sys.argv[1], foreground=True, nothreads=False)
