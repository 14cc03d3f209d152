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
- its noise band: `BAND_SE` standard errors of the speedup either way, from each arm's
  pace spread over its requests (`pace_rel_se`), averaged over the repeats and
  shrunk by their number, or the repeats' range where that is wider;
- C* from that speedup and band (`crossover.find_crossover`), and its interval by the
  overall C*'s bootstrap (`c_star_interval`) on the category's paces and their spread.

The verdict says that categories disagree only where the noise allows it: two
categories' C* intervals do not overlap ("code pays up to C = 48, chat only to
C = 16"), and that the recommendation holds for the run's mix, which it names.
Categories of one drafter and equal acceptance differ by their prompts' lengths and by
chance; a run of few requests per category tells them apart only that far.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from specload.report.c_star_interval import Interval, c_star_interval
from specload.report.crossover import ALWAYS, CROSSES, NEVER, Crossover, PairResult, find_crossover

# what a verdict without a C* says of a category, or of several named together
GROUPS = {ALWAYS: "pays at every C measured", NEVER: "never pays"}
UNCLEAR = "no clear crossover (within the noise)"
BAND_SE = 2.0  # a category's speedup band: this many standard errors either way
COLUMNS = ("category", "concurrency", "token_share", "accept_len", "tok_s_on", "tok_s_off",
           "tpot_on_ms", "tpot_off_ms", "speedup", "band_lo", "band_hi")


@dataclass(slots=True)
class CategoryPair:
    """One pair's figures per category and rung, and C* per category."""

    on: str
    off: str
    rows: pd.DataFrame  # COLUMNS
    crossovers: dict[str, Crossover]
    mix: dict[str, float]  # each category's share of the spec-on arm's requests
    intervals: dict[str, Interval]  # on each category's C*
    what: str = "prompt category"  # what the groups are (`context_buckets`: by length)

    def reach(self, category: str) -> str:
        """`pays up to C = 48`, `pays at every C measured`, `never pays`."""
        found = self.crossovers[category]
        if found.verdict == CROSSES and found.c_star is not None:
            span = self.intervals.get(category)
            text = f"pays up to C = {found.c_star:.3g}"
            if span is not None and not (span.below or span.above):
                text += f" ({span.level:.0%}: {span.lo:.3g}-{span.hi:.3g})"
            return text
        return GROUPS.get(found.verdict, "has no clear crossover (within its noise)")

    def _grouped(self, by_reach: list[str]) -> list[str]:
        """Each crossing category with its C*, and the categories of each verdict without
        one (always, never, unclear) named together: a mix of many reads in one line."""
        named: dict[str, list[str]] = {}  # a crossing category's phrase, or a group's
        for category in by_reach:
            found = self.crossovers[category]
            if found.verdict == CROSSES and found.c_star is not None:
                named[f"{category} {self.reach(category)}"] = []
            else:
                named.setdefault(GROUPS.get(found.verdict, UNCLEAR), []).append(category)
        return [f"{key}: {', '.join(names)}" if names else key for key, names in named.items()]

    def disagree(self) -> bool:
        """Two categories' C* intervals do not overlap."""
        spans = list(self.intervals.values())
        return any(a.lo > b.hi for a in spans for b in spans)

    def mix_words(self) -> str:
        return ", ".join(f"{name} {share:.0%}" for name, share in
                         sorted(self.mix.items(), key=lambda kv: -kv[1]))

    def lines(self) -> list[str]:
        by_reach = sorted(self.crossovers, key=lambda c: -_order(self.crossovers[c]))
        out = [f"{self.on} vs {self.off} by {self.what}: "
               + "; ".join(self._grouped(by_reach))]
        if self.what != "prompt category":
            return [*out, f"  the mix: {self.mix_words()}"]
        if self.disagree():
            first, last = by_reach[0], by_reach[-1]
            least = self.reach(last)
            least = f"only {least.removeprefix('pays ')}" if least.startswith("pays ") else least
            out.append(f"  categories disagree: {first} {self.reach(first)}, {last} {least}; "
                       f"the recommendation holds for this run's mix ({self.mix_words()}): "
                       "weight request.categories as your traffic is to get yours")
        return out

    def as_dict(self) -> dict[str, object]:
        return {"spec_on": self.on, "spec_off": self.off, "groups": self.what, "mix": self.mix,
                "disagree": self.disagree(),
                "c_star": {c: x.as_dict() for c, x in self.crossovers.items()},
                "c_star_interval": {c: x.as_dict() for c, x in self.intervals.items()},
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


def analyse_pair(pair: PairResult, per_rep: pd.DataFrame, what: str = "prompt category"
                 ) -> CategoryPair | None:
    """The pair by category (`by_category`, whose groups are `what`), or None when its
    requests are not of two categories."""
    if "by_category" not in per_rep:
        return None
    on, off = _per_rep(per_rep, pair.on.name), _per_rep(per_rep, pair.off.name)
    if on.empty or off.empty:
        return None
    both = on.merge(off, on=["rep", "concurrency", "category"], suffixes=("_on", "_off"))
    if both["category"].nunique() < 2:
        return None
    both["speedup"] = both["tok_s_per_request_on"] / both["tok_s_per_request_off"]
    both["speedup_se"] = both["speedup"] * np.hypot(both["pace_rel_se_on"],
                                                    both["pace_rel_se_off"])
    both["token_share"] = both["tokens_on"] / both["window_tokens_on"]
    grouped = both.groupby(["category", "concurrency"], sort=True)
    speedup = grouped["speedup"].mean()
    half = BAND_SE * grouped["speedup_se"].mean() / np.sqrt(grouped["speedup"].count())
    rows = pd.DataFrame({
        "token_share": grouped["token_share"].mean(),
        "accept_len": grouped["req_accept_len_on"].mean(),
        "tok_s_on": grouped["tok_s_per_request_on"].mean(),
        "tok_s_off": grouped["tok_s_per_request_off"].mean(),
        "tpot_on_ms": grouped["tpot_p50_ms_on"].mean(),
        "tpot_off_ms": grouped["tpot_p50_ms_off"].mean(),
        "speedup": speedup,
        "band_lo": np.fmin(speedup - half, grouped["speedup"].min()),
        "band_hi": np.fmax(speedup + half, grouped["speedup"].max()),
    }).reset_index()[list(COLUMNS)]
    crossovers = {}
    for name, part in rows.groupby("category", sort=True):
        crossovers[str(name)] = find_crossover(
            part["concurrency"].to_numpy(dtype=float), part["speedup"].to_numpy(dtype=float),
            part["band_lo"].to_numpy(dtype=float), part["band_hi"].to_numpy(dtype=float),
            band=f"{BAND_SE:g} standard errors over the requests")
    requests = on.groupby("category")["requests"].sum()
    mix = (requests / requests.sum()).round(4).to_dict() if requests.sum() else {}
    intervals = {}
    for name, part in rows[np.isfinite(rows["speedup"])].groupby("category", sort=True):
        span = c_star_interval(part["concurrency"].unique(), _paces(on, str(name)),
                               _paces(off, str(name)))
        if span is not None:
            intervals[str(name)] = span
    return CategoryPair(pair.on.name, pair.off.name, rows, crossovers,
                        {str(k): float(v) for k, v in mix.items()}, intervals, what)


def _paces(rows: pd.DataFrame, category: str) -> pd.DataFrame:
    """One category's per-repeat paces as `c_star_interval` reads an arm's tok/s."""
    mine = rows[(rows["category"] == category) & np.isfinite(rows["tok_s_per_request"])]
    return pd.DataFrame({"rep": mine["rep"], "concurrency": mine["concurrency"],
                         "output_tok_s": mine["tok_s_per_request"],
                         "output_tok_s_se": mine["tok_s_per_request"] * mine["pace_rel_se"]})


def analyse(pairs: Sequence[PairResult], per_rep: pd.DataFrame) -> list[CategoryPair]:
    """Every pair's figures by category, for the pairs whose requests have two or more."""
    found = (analyse_pair(p, per_rep) for p in pairs)
    return [c for c in found if c is not None]
