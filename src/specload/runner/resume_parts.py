"""Finished rungs of a repeat, and folding a resumed part's files into the repeat's files.

An interrupted repeat keeps the rungs it finished (its rungs file lists exactly those).
`--resume` runs only the missing rungs, as a separate Locust run writing to
`<rep dir>/part-N/locust_*`, and then appends that part's rows to the repeat's own
files so the report sees one complete set: rungs (renumbered to their index in
the full ladder, or rate ladder, which increasing levels make unambiguous), per-request rows,
client stats and Locust's stats history are appended; Locust's failure table is merged
by summing occurrences; the trace of the resumed server (a simulated arm's) is appended
to the repeat's trace once that server stops, so that it matches the repeat's request
rows. An interleaved sweep runs each rung as its own Locust run against a server that
stays up, so its later rungs are parts too. The workers' clock rounds
and events are appended too. Locust's aggregate `_stats.csv` cannot be merged from
percentiles, so each part keeps its own in its part folder. Rows are only ever appended;
every row carries absolute epoch times and its process's `client_id` (the key of its
clock rounds), so nothing needs shifting.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from specload.runfiles.records import (
    CLIENT_STATS_SUFFIX,
    CLOCK_SUFFIX,
    EVENTS_SUFFIX,
    LOCUST_FAILURES_SUFFIX,
    LOCUST_HISTORY_SUFFIX,
    REQUESTS_SUFFIX,
    RUNGS_SUFFIX,
    SERVER_METRICS_SUFFIX,
    SERVER_TRACE_NAME,
    complete_length,
    level_column,
    rungs_path,
)

APPENDED_SUFFIXES = (REQUESTS_SUFFIX, CLIENT_STATS_SUFFIX, LOCUST_HISTORY_SUFFIX,
                     CLOCK_SUFFIX, EVENTS_SUFFIX)


def _read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """A CSV file's header and rows, complete lines only (`records.complete_length`)."""
    try:
        with path.open("rb") as fh:
            text = fh.read(complete_length(path)).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return [], []
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return (rows[0], rows[1:]) if rows else ([], [])


def cut_partial_rows(prefix: Path) -> list[Path]:
    """Cut off the row a killed writer (or a full disk) left half-written at the end of
    each of a repeat's appended files, its /metrics samples (the resumed server's sampler
    appends to them) and its trace (rows are appended after it); the files cut."""
    cut = []
    paths = [Path(str(prefix) + suffix)
             for suffix in (RUNGS_SUFFIX, SERVER_METRICS_SUFFIX, *APPENDED_SUFFIXES)]
    for path in (*paths, prefix.parent / SERVER_TRACE_NAME):
        if path.is_file() and (whole := complete_length(path)) < path.stat().st_size:
            os.truncate(path, whole)
            cut.append(path)
    return cut


def finished_rungs(prefix: Path) -> list[tuple[float, float]]:
    """Each completed rung: what it stepped (`records.level_column`) and when its measure
    window ended (epoch s)."""
    header, rows = _read_rows(rungs_path(prefix))
    col = level_column(header)
    if col is None:
        return []
    i, end = header.index(col), header.index("measure_end")
    return [(_level(r[i]), float(r[end])) for r in rows if len(r) > max(i, end) and r[i].strip()]


def drop_rungs_since(prefix: Path, t: float) -> list[float]:
    """Take the rungs whose window ended after epoch time `t` off the rungs file (they
    were measured while the server was stalled): `--resume` runs them again, and their
    requests' rows lie in no rung's window. The levels dropped."""
    path = rungs_path(prefix)
    header, rows = _read_rows(path)
    level = level_column(header)
    if "measure_end" not in header or level is None:
        return []
    end, col = header.index("measure_end"), header.index(level)
    dropped = [r for r in rows if len(r) > max(end, col) and float(r[end]) >= t]
    if not dropped:
        return []
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(r for r in rows if r not in dropped)
    return [_level(r[col]) for r in dropped]


def finished_levels(prefix: Path) -> list[float]:
    """What each completed rung stepped (see `finished_rungs`)."""
    return [level for level, _ in finished_rungs(prefix)]


def _level(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() else value


Transform = Callable[[list[str], list[str]], list[str]]


def _append(src: Path, dst: Path, transform: Transform | None = None) -> None:
    header, rows = _read_rows(src)
    if not header:
        return
    if transform is not None:
        rows = [transform(header, r) for r in rows]
    new = not dst.exists() or dst.stat().st_size == 0
    if not new:  # a run folder of an older specload: its files keep their own columns
        with dst.open(newline="") as fh:
            kept = next(csv.reader([fh.readline()]), [])
        if kept and kept != header:
            rows = [[row[header.index(c)] if c in header else "" for c in kept]
                    for row in rows]
    with dst.open("a", newline="") as fh:
        writer = csv.writer(fh)
        if new:
            writer.writerow(header)
        writer.writerows(rows)


def _merge_failures(src: Path, dst: Path) -> None:
    header_a, rows_a = _read_rows(dst)
    header_b, rows_b = _read_rows(src)
    header = header_a or header_b
    if not header or "Occurrences" not in header:
        return
    occ = header.index("Occurrences")
    totals: dict[tuple[str, ...], list[str]] = {}
    for row in [*rows_a, *rows_b]:
        key = tuple(v for i, v in enumerate(row) if i != occ)
        if key in totals:
            totals[key][occ] = str(int(totals[key][occ]) + int(row[occ]))
        else:
            totals[key] = list(row)
    with dst.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(totals.values())


def merge_part(part_prefix: Path, main_prefix: Path, levels: Sequence[float]) -> None:
    """Append a resumed part's rows to the main prefix's files."""

    def renumber(header: list[str], row: list[str]) -> list[str]:
        out = list(row)
        level = _level(row[header.index(level_column(header) or "users")])
        out[header.index("rung")] = str(list(levels).index(level))
        return out

    def files(suffix: str) -> tuple[Path, Path]:
        return Path(str(part_prefix) + suffix), Path(str(main_prefix) + suffix)

    # the rungs last: a merge cut short (a full disk) leaves its rungs to run again, and
    # the rows it did append lie in no finished rung's window
    for suffix in APPENDED_SUFFIXES:
        _append(*files(suffix))
    _merge_failures(*files(LOCUST_FAILURES_SUFFIX))
    _append(*files(RUNGS_SUFFIX), transform=renumber)


def merge_trace(part_dir: Path, rep_dir: Path) -> None:
    """Append the trace a resumed repeat's server wrote in its part folder to the
    repeat's own, once that server has stopped."""
    trace = part_dir / SERVER_TRACE_NAME
    if trace.exists():
        with (rep_dir / SERVER_TRACE_NAME).open("ab") as dst:
            dst.write(trace.read_bytes())
