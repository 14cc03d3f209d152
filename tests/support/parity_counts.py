"""Output parity recounted from the request files alone, for the real tier's checks.

For each arm, the first successful reply per prompt (digest and max_tokens) among the
requests that started in a rung's measure window, repeats in order; then, per rung, how
many prompts two arms both answered and how many of those replies are identical. The
report's `report/parity.py` must give the same counts (`assert_reported`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tests.support.sweeps import read_csv

Firsts = dict[str, dict[tuple[str, str], str]]  # rung label -> (prompt, max_tokens) -> reply


def _prefixes(arm_dir: Path) -> list[Path]:
    reps = sorted(arm_dir.glob("rep-*"), key=lambda p: int(p.name.split("-")[1]))
    return [rep / "locust" for rep in reps] or [arm_dir / "locust"]


def first_replies(arm_dir: Path) -> Firsts:
    found: Firsts = {}
    for prefix in _prefixes(arm_dir):
        rungs = read_csv(Path(f"{prefix}_rungs.csv"))
        for r in read_csv(Path(f"{prefix}_requests.csv")):
            start = float(r["start"])
            rung = next((f"C={w['users']}" for w in rungs
                         if float(w["measure_start"]) <= start < float(w["measure_end"])), None)
            if rung is not None and r["error_kind"] == "" and r["reply_hash"]:
                found.setdefault(rung, {}).setdefault((r["prompt_hash"], r["max_tokens"]),
                                                      r["reply_hash"])
    return found


def recount(run: Path, arm: str, reference: str) -> dict[str, tuple[int, int]]:
    """(compared, identical) per rung of `arm`'s replies against `reference`'s."""
    mine, ref = first_replies(run / arm), first_replies(run / reference)
    counts = {}
    for rung, replies in mine.items():
        common = replies.keys() & ref.get(rung, {}).keys()
        counts[rung] = (len(common), sum(replies[k] == ref[rung][k] for k in common))
    return counts


def assert_reported(run: Path, ladder: Sequence[int]) -> list[str]:
    """The run's summary compares every arm with the reference at every rung of
    `ladder`, on the counts the files give; the lines to print."""
    summary = json.loads((run / "summary.json").read_text())
    parity = summary["parity"]
    assert parity is not None and parity["compared"], parity
    lines = []
    for arm in parity["arms"]:
        rungs = {r["rung"]: (r["compared"], r["identical"]) for r in arm["rungs"]}
        assert list(rungs) == [f"C={c}" for c in ladder], rungs
        assert all(n > 0 for n, _ in rungs.values()), rungs
        assert rungs == recount(run, arm["arm"], parity["reference"]), arm["arm"]
        lines.append(f"{arm['arm']} against {parity['reference']}: " + ", ".join(
            f"{rung} {same}/{n}" for rung, (n, same) in rungs.items())
            + _where(arm["overall"]["first_diff_tokens_median"]))
    floor = parity["floor"]
    lines.append(f"{parity['reference']} against itself: {floor['identical']}/{floor['compared']}")
    return lines


def _where(token: float | None) -> str:
    return "" if token is None else f"; the others first differ at token ~{token:.0f} (median)"
