"""A repeat's measured rung table, kept in the per-user cache so each repeat is measured once.

A sweep analyses its run after each step that needs it (the crossover search, a
tiebreak, the verify arm) and once more for its report, and `specload report` may run
again on a finished run; each time, `report/aggregate.py` measured every repeat from its
files again. `measured` keeps the table one measurement gives under `<cache>/measured/`
(`host/user_cache.py`), named by a digest of everything the table depends on:
- each of the repeat's files (those of its Locust prefix and the simulator's trace
  beside them): path, size, inode and change times, taken before they are read;
- every source file of specload;
- the versions of Python, numpy, pandas and pyarrow.

A change to any of them is a miss, and the repeat is measured again. A table is kept
once the sweep has finished the repeat, or else once all its files are older than
`SETTLE_S`: a file written again within its clock's tick would keep its times (git
treats its index the same way). A cache that cannot be read or written is a miss,
never an error; beyond `MAX_TABLES` the tables least recently used are removed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

import specload
from specload.host.user_cache import cache_root
from specload.runfiles.records import LEGACY_SERVER_TRACE_NAME, SERVER_TRACE_NAME

FOLDER = "measured"
MAX_TABLES = 1000
SETTLE_S = 2.0
_PACKAGE = Path(specload.__file__).resolve().parent


@functools.cache
def code_digest(package: Path = _PACKAGE) -> bytes:
    """Digest of every source file under `package` and the libraries' versions."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*.py")):
        source = path.read_bytes()
        h.update(f"{path.relative_to(package).as_posix()}\0{len(source)}\0".encode() + source)
    h.update("\0".join((sys.version, np.__version__, pd.__version__, pa.__version__)).encode())
    return h.digest()


def rep_files(prefix: Path) -> list[Path]:
    """The files a repeat's measurement reads: its prefix's and the trace beside them."""
    folder, name = prefix.parent, prefix.name
    traces = (SERVER_TRACE_NAME, LEGACY_SERVER_TRACE_NAME)
    return sorted(p for p in folder.iterdir()
                  if (p.name.startswith(name) or p.name in traces) and p.is_file())


def _key(prefix: Path) -> tuple[str, float]:
    """The table's name for the repeat's files as they are now, and their newest write."""
    h = hashlib.blake2b(code_digest(), digest_size=20)
    h.update(str(prefix.resolve()).encode())
    newest = 0.0
    for path in rep_files(prefix):
        st = path.stat()
        h.update(f"\0{path.name}\0{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0"
                 f"{st.st_ctime_ns}".encode())
        newest = max(newest, st.st_mtime)
    return h.hexdigest(), newest


def _load(path: Path) -> pd.DataFrame | None:
    # Only the user's own cache is unpickled, never a file found in a run's folder.
    try:
        with path.open("rb") as fh:
            table = pickle.load(fh)
        os.utime(path)  # recently used: kept longest
    except Exception:  # missing, or damaged: any unpickling error is a miss
        return None
    return table if isinstance(table, pd.DataFrame) else None


def _last_used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # removed by another report pruning at the same time
        return 0.0


def _prune(folder: Path, keep: int) -> None:
    tables = list(folder.glob("*.pkl"))
    if len(tables) <= keep:
        return
    by_use = sorted(tables, key=_last_used)
    for path in by_use[: len(tables) - keep]:
        path.unlink(missing_ok=True)


def _store(path: Path, table: pd.DataFrame) -> None:
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with part.open("wb") as fh:
            pickle.dump(table, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(part, path)
        _prune(path.parent, MAX_TABLES)
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)


def _path(key: str) -> Path:
    return cache_root() / FOLDER / f"{key}.pkl"


def kept(prefix: Path) -> pd.DataFrame | None:
    """The table kept for the repeat's files as they are now, if there is one."""
    try:
        key, _ = _key(prefix)
    except OSError:
        return None
    return _load(_path(key))


def measured(prefix: Path, measure: Callable[[Path], pd.DataFrame], done: bool = False
             ) -> pd.DataFrame:
    """`measure(prefix)`, or the table it gave for the same files and code before;
    `done`: the sweep finished the repeat, so its table is kept however new its files."""
    try:
        key, newest = _key(prefix)
    except OSError:
        return measure(prefix)
    path = _path(key)
    table = _load(path)
    if table is None:
        table = measure(prefix)
        if done or time.time() - newest > SETTLE_S:
            _store(path, table)
    return table
