"""Spark's rules for the paths its readers are given, applied on the driver: globs (every path is one), hidden
names (skipped), and the size of an input on the local disk (measured without starting Spark, for choices of the
session that change speed only: spark.session.small_local_input)."""
from __future__ import annotations

import glob
import os
import re

# Read by Hadoop's codecs (JSON, CSV, text) or by wet.py (WET).
COMPRESSIONS = (".gz", ".bz2", ".zst")
_GLOB_CHARS = re.compile(r"([\\*?\[\]{}])")


def has_glob(path: str) -> bool:
    return any(c in path for c in "*?[{")


def escape_glob(path: str) -> str:
    """The path as a Hadoop glob that matches exactly itself: Spark's readers glob every path they are given."""
    return _GLOB_CHARS.sub(r"\\\1", path)


def is_hidden(name: str) -> bool:
    """Spark's rule for files and directories its readers skip (InMemoryFileIndex.shouldFilterOutPathName)."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def local_input_bytes(path: str, limit: int) -> int | None:
    """The bytes of the data files --input names on the local file system (hidden ones skipped, as Spark does; a
    compressed file counted 4x, roughly what it holds), sized without starting Spark. Any number above `limit`
    once the count passes it (a large tree is not walked to its end). None when the input is not local
    (another scheme), a brace glob (Hadoop's syntax, not Python's), not found, or holds a file that cannot be
    sized (a broken link: Spark will say what is wrong). For choices that only change speed
    (session.small_run_conf)."""
    try:
        return _local_bytes(path, limit)
    except OSError:
        return None


def _local_bytes(path: str, limit: int) -> int | None:
    if path.startswith("file:"):
        path = re.sub(r"^file:(//(?=/))?", "", path)
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        return None
    if os.path.exists(path):
        roots = [path]
    elif has_glob(path) and "{" not in path:
        roots = [p for p in glob.glob(path) if not is_hidden(os.path.basename(p))]
    else:
        return None
    if not roots:
        return None
    total = 0
    for file in _data_files(roots):
        size = os.path.getsize(file)
        total += 4 * size if file.endswith(COMPRESSIONS) else size
        if total > limit:
            return total
    return total


def _data_files(roots: list[str]):
    """The files under roots that Spark's reader would read (hidden files and folders skipped), lazily."""
    for root in roots:
        if not os.path.isdir(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not is_hidden(d)]
            yield from (os.path.join(folder, name) for name in files if not is_hidden(name))
