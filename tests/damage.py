"""Damage put where a cache entry was, for the cache tests (tests/units/test_diskcache.py,
tests/book/test_fast.py): a folder, a FIFO, a link to /dev/zero, nothing, or other bytes."""

import os
import shutil


def put_damage(path, how) -> None:
    """Replace ``path`` with damage of kind ``how``: ``"folder"``, ``"fifo"``, ``"dev-zero"``
    (a symlink to /dev/zero), ``"removed"``, or the bytes to write."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if how == "folder":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how != "removed":
        path.write_bytes(how)
