"""Speedup and C* per prompt category: where a mixed workload's crossover comes from.

A drafter accepts code far more often than open chat, so one C* over a mixed workload
averages crossovers that may lie far apart. Each rung's requests carry their prompt's
category, and `client_metrics` keeps per category (`by_category`, per repeat): the
tokens it streamed in the window, the requests that started there, their TPOT p50 and
their own acceptance length. For each spec-on/spec-off pair and category, per rung:
- its share of the window's tokens and its acceptance length (spec-on);
- the speedup a request of that category sees: its tokens per second in flight on /
  off (the category's tokens in the window over its requests' time in flight there,
  queueing included; no request is left out for not having ended). A category's share
  of a closed loop's tok/s follows the whole mix's pace, not its own, so its tok/s ratio
  would be the mix's. In a mix the categories share the batch and the queue: a code
  request's speedup is the one it gets beside this much chat, and a category's C*
  alone comes from a run that selects it (`request.categories: {code: 1}`);
- C* from that speedup (`crossover.find_crossover`, the band the repeats' spread).

The verdict says when categories disagree ("code pays up to C = 48, chat only to
C = 16": C* apart by more than `DISAGREE`, or different verdicts), and that the
recommendation holds for the run's mix, which it names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.crossover import ALWAYS, CROSSES, NEVER, Crossover, PairResult, find_crossover

DISAGREE = 1.5  # two categories' C* this far apart (a ratio) disagree
COLUMNS = ("category", "concurrency", "token_share", "accept_len", "tok_s_on", "tok_s_off",
           "tpot_on_ms", "tpot_off_ms", "speedup", "speedup_min", "speedup_max")


@dataclass(slots=True)
class CategoryPair:
    """One pair's figures per category and rung, and C* per category."""

    on: str
    off: str
    rows: pd.DataFrame  # COLUMNS
    crossovers: dict[str, Crossover]
    mix: dict[str, float]  # each category's share of the spec-on arm's requests

    def reach(self, category: str) -> str:
        """`pays up to C = 48`, `pays at every C measured`, `never pays`."""
        found = self.crossovers[category]
        if found.verdict == CROSSES and found.c_star is not None:
            return f"pays up to C = {found.c_star:.3g}"
        if found.verdict == ALWAYS:
            return "pays at every C measured"
        if found.verdict == NEVER:
            return "never pays"
        return f"is {found.verdict}"

    def disagree(self) -> bool:
        """Categories reach different verdicts, or C* this far apart."""
        verdicts = {c.verdict for c in self.crossovers.values()}
        stars = [c.c_star for c in self.crossovers.values()
                 if c.verdict == CROSSES and c.c_star is not None]
        return len(verdicts) > 1 or (len(stars) > 1 and max(stars) / min(stars) > DISAGREE)

    def mix_words(self) -> str:
        return ", ".join(f"{name} {share:.0%}" for name, share in
                         sorted(self.mix.items(), key=lambda kv: -kv[1]))

    def lines(self) -> list[str]:
        by_reach = sorted(self.crossovers, key=lambda c: -_order(self.crossovers[c]))
        out = [f"{self.on} vs {self.off} by prompt category: "
               + "; ".join(f"{c} {self.reach(c)}" for c in by_reach)]
        if self.disagree():
            first, last = by_reach[0], by_reach[-1]
            least = self.reach(last)
            least = f"only {least.removeprefix('pays ')}" if least.startswith("pays ") else least
            out.append(f"  categories disagree: {first} {self.reach(first)}, {last} {least}; "
                       f"the recommendation holds for this run's mix ({self.mix_words()}): "
                       "weight request.categories as your traffic is to get yours")
        return out

    def as_dict(self) -> dict[str, object]:
        return {"spec_on": self.on, "spec_off": self.off, "mix": self.mix,
                "disagree": self.disagree(),
                "c_star": {c: x.as_dict() for c, x in self.crossovers.items()},
                "rungs": self.rows.replace({np.nan: None}).to_dict(orient="records")}


def _order(found: Crossover) -> float:
    """Sort key: how far speculation pays."""
    if found.verdict == ALWAYS:
        return math.inf
    if found.verdict == CROSSES and found.c_star is not None:
        return found.c_star
    return -math.inf


def _per_rep(per_rep: pd.DataFrame, arm: str) -> pd.DataFrame:
    """One row per repeat, rung and category of an arm's `by_category` figures."""
    rows = [{"rep": r.rep, "concurrency": r.concurrency, "category": name, **figures,
             "window_tokens": sum(f["tokens"] for f in r.by_category.values())}
            for r in per_rep[per_rep["arm"] == arm].itertuples()
            if isinstance(r.by_category, dict)
            for name, figures in r.by_category.items()]
    return pd.DataFrame(rows)


def analyse_pair(pair: PairResult, per_rep: pd.DataFrame) -> CategoryPair | None:
    """The pair by category, or None when its requests are not of two categories."""
    if "by_category" not in per_rep:
        return None
    on, off = _per_rep(per_rep, pair.on.name), _per_rep(per_rep, pair.off.name)
    if on.empty or off.empty:
        return None
    both = on.merge(off, on=["rep", "concurrency", "category"], suffixes=("_on", "_off"))
    if both["category"].nunique() < 2:
        return None
    both["speedup"] = both["tok_s_per_request_on"] / both["tok_s_per_request_off"]
    both["token_share"] = both["tokens_on"] / both["window_tokens_on"]
    grouped = both.groupby(["category", "concurrency"], sort=True)
    rows = pd.DataFrame({
        "token_share": grouped["token_share"].mean(),
        "accept_len": grouped["req_accept_len_on"].mean(),
        "tok_s_on": grouped["tok_s_per_request_on"].mean(),
        "tok_s_off": grouped["tok_s_per_request_off"].mean(),
        "tpot_on_ms": grouped["tpot_p50_ms_on"].mean(),
        "tpot_off_ms": grouped["tpot_p50_ms_off"].mean(),
        "speedup": grouped["speedup"].mean(),
        "speedup_min": grouped["speedup"].min(),
        "speedup_max": grouped["speedup"].max(),
    }).reset_index()[list(COLUMNS)]
    crossovers = {}
    for name, part in rows.groupby("category", sort=True):
        crossovers[str(name)] = _crossover(part, both["rep"].nunique() > 1)
    requests = on.groupby("category")["requests"].sum()
    mix = (requests / requests.sum()).round(4).to_dict() if requests.sum() else {}
    return CategoryPair(pair.on.name, pair.off.name, rows, crossovers,
                        {str(k): float(v) for k, v in mix.items()})


def _crossover(part: pd.DataFrame, repeated: bool) -> Crossover:
    """C* of one category's speedup; with repeats, their range is the noise band."""
    c, s = part["concurrency"].to_numpy(dtype=float), part["speedup"].to_numpy(dtype=float)
    if not repeated:
        return find_crossover(c, s)
    return find_crossover(c, s, part["speedup_min"].to_numpy(dtype=float),
                          part["speedup_max"].to_numpy(dtype=float))


def analyse(pairs: Sequence[PairResult], per_rep: pd.DataFrame) -> list[CategoryPair]:
    """Every pair's figures by category, for the pairs whose requests have two or more."""
    found = (analyse_pair(p, per_rep) for p in pairs)
    return [c for c in found if c is not None]
