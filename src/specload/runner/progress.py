"""The sweep's progress lines: one per finished rung, with the figures the report will show.

The Locust process appends a line to `<prefix>_live.jsonl` once a rung is complete
(every request that could count for it has ended and its row is on disk,
`loadgen/live.py`). For each new line this module reads the requests file and computes
the rung's figures with the report's own function (`client_metrics.measure`), so the
tok/s, TTFT and failures a progress line shows are the table's; it formats them with
elapsed time and an estimate of the time left, and judges an arm by its failures. In a
distributed run it also tells what the master noticed about its workers (a lost
worker, a doubtful clock: `<prefix>_events.csv`), once per worker and kind of clock
problem.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from specload.report.rung_columns import View, names
from specload.report.table import NONE_SENT
from specload.runfiles.records import (
    CONCURRENCY_SHORTFALL,
    EVENTS_SUFFIX,
    LIVE_SUFFIX,
    LOCUST_FAILURES_SUFFIX,
)

# An arm where more than this share of requests failed is marked failed.
FAILED_ARM_SHARE = 0.5
# A window longer than its cap by more than this (the shape's tick) was stretched.
STRETCH_NOTICE_S = 1.0


def fmt_s(seconds: float) -> str:
    """`75` -> `1m15s`, `9` -> `9s`."""
    m, s = divmod(max(0, int(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def live_lines(prefix: Path) -> list[dict[str, Any]]:
    """The complete lines of `<prefix>_live.jsonl` so far."""
    try:
        text = Path(f"{prefix}{LIVE_SUFFIX}").read_bytes()
    except FileNotFoundError:
        return []
    return [orjson.loads(line) for line in text.split(b"\n")[:-1] if line.strip()]


class WorkerEvents:
    """New lines of a run's `<prefix>_events.csv`, as console lines; a clock problem is
    told once per worker and kind (the report lists every one)."""

    def __init__(self, prefix: Path) -> None:
        self.path = Path(f"{prefix}{EVENTS_SUFFIX}")
        self._seen = 0
        self._told: set[tuple[str, str]] = set()

    def new_lines(self, label: str) -> list[str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        complete = text[:text.rfind("\n") + 1]
        rows = list(csv.DictReader(complete.splitlines()))
        out = []
        for row in rows[self._seen:]:
            key = (row["client_id"], row["event"])
            if key in self._told:
                continue
            if row["event"].startswith("clock_"):
                self._told.add(key)
            out.append(f"[{label}] warning: worker {row['client_id']}: {row['detail']}")
        self._seen = len(rows)
        return out


FIGURES = names(View.PROGRESS)


def rung_figures(prefix: Path, line: dict[str, Any]) -> dict[str, Any]:
    """The live line with the rung's figures, as the report computes them."""
    from specload.errors import UserError
    from specload.report.client_metrics import measure
    from specload.report.run_files import read_requests
    from specload.report.windows import Window

    try:
        requests = read_requests(prefix)
    except UserError:
        return line  # no request has ended yet
    if requests.empty:
        return line
    window = Window(int(line["rung"]), int(line["users"]), float(line["measure_start"]),
                    float(line["measure_end"]), line.get("rate"), speed=line.get("speed"))
    row = measure(requests, [window]).iloc[0]
    return {**line, **{k: (v.item() if hasattr(v, "item") else v)
                       for k, v in row.items() if k in FIGURES}}


def _number(value: Any) -> float | None:
    if value == "inf":
        return float("inf")
    if isinstance(value, int | float) and value == value:  # NaN: not measured
        return float(value)
    return None


def _latency(value: Any, waited: Any = None) -> str:
    ms = _number(value)
    if ms is None:
        return "-"
    if ms != float("inf"):
        return f"{ms:.0f} ms"
    bound = _number(waited)
    return "> timeout" if bound is None else f"> {bound:.0f} ms (still queued)"


def failure_text(failures: int, total: int, reason: str) -> str:
    """`failures 3 of 40 (7.5%): HTTP 500: boom`, or `no failures`."""
    if not failures:
        return "no failures"
    share = 100.0 * failures / total if total else 100.0
    return f"failures {failures} of {total} ({share:.0f}%)" + (f": {reason}" if reason else "")


def progress_line(label: str, line: dict[str, Any], levels: Sequence[float],
                  elapsed_s: float, remaining_s: float, max_window_s: float = math.inf,
                  holds_c: bool = False, steps: bool = False) -> str:
    """One finished rung, as a person reading the console wants it; a window that ran
    past `max_window_s` (its requests were long: `ladder.window_cap`) says so, and so
    does a rung of users (`holds_c`) whose achieved concurrency fell short of C. A load
    step (`steps`: the levels run in order, whole) is named by its place."""
    rate, speed = line.get("rate"), line.get("speed")
    level = speed if speed is not None else rate if rate is not None else int(line["users"])
    if steps:
        head = f"[{label}] step {int(line['rung']) + 1}/{len(levels)} to {level} users"
    else:
        step = (f"speed {speed:g}x ({rate:.3g}/s)" if speed is not None else
                f"rate={rate:g}/s" if rate is not None else f"C={line['users']}")
        head = f"[{label}] rung {list(levels).index(level) + 1}/{len(levels)} {step}"
    tok_s = _number(line.get("output_tok_s"))
    if tok_s is None:
        figures = "no requests measured"
    else:
        failures = int(line.get("failures") or 0)
        total = int(line.get("requests") or 0) + failures
        ttft = (NONE_SENT if line.get("requests_started") == 0
                else _latency(line.get("ttft_p50_ms"), line.get("ttft_p50_lb_ms")))
        figures = (f"{tok_s:.1f} tok/s, TTFT p50 {ttft}, "
                   f"{int(line.get('requests') or 0)} requests, "
                   f"{failure_text(failures, total, str(line.get('top_failure') or ''))}")
        figures += short_of_c(line) if holds_c and rate is None else ""
    window = float(line.get("measure_end", 0.0)) - float(line.get("measure_start", 0.0))
    if window > max_window_s + STRETCH_NOTICE_S:
        figures += (f", window stretched to {fmt_s(window)} (max {fmt_s(max_window_s)}): its "
                    "requests are long, and every user's had to end and a new one start")
    return f"{head} | {figures} | elapsed {fmt_s(elapsed_s)}, ETA ~{fmt_s(remaining_s)}"


def short_of_c(line: dict[str, Any]) -> str:
    """`, SHORT OF C: achieved 2.7 of 4` where the rung's users held less than
    `CONCURRENCY_SHORTFALL` under C in flight, else ""."""
    achieved, users = _number(line.get("achieved_concurrency")), int(line["users"])
    if achieved is None or achieved >= (1 - CONCURRENCY_SHORTFALL) * users:
        return ""
    return f", SHORT OF C: achieved {achieved:.1f} of {users}"


def top_failure(prefix: Path) -> str:
    """The most frequent entry of Locust's failure table ("" if none), e.g. for requests
    that never produced a record (model discovery)."""
    try:
        with Path(f"{prefix}{LOCUST_FAILURES_SUFFIX}").open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error):
        return ""
    rows = [r for r in rows if r.get("Occurrences", "").isdigit()]
    if not rows:
        return ""
    top = max(rows, key=lambda r: int(r["Occurrences"]))
    return f"{top.get('Method', '')} {top.get('Name', '')}: {top.get('Error', '')}".strip()


def arm_failure(lines: Sequence[dict[str, Any]], prefix: Path) -> str | None:
    """Why an arm counts as failed (most requests failed, or none got through), or None."""
    failures = sum(int(ln.get("failures") or 0) for ln in lines)
    ok = sum(int(ln.get("requests") or 0) for ln in lines)
    reasons = [str(ln.get("top_failure") or "") for ln in lines if ln.get("failures")]
    total = ok + failures
    if total and failures / total > FAILED_ARM_SHARE:
        return (f"{failure_text(failures, total, reasons[-1] if reasons else '')} "
                f"(more than {FAILED_ARM_SHARE:.0%} failed)")
    if lines and total == 0:
        why = top_failure(prefix)
        return "no request completed in any rung" + (f": {why}" if why else "")
    return None
