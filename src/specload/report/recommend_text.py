"""A recommendation's words and files, rendered from its `recommend.Decision`.

`recommendation` words a pair's decision: the verdict summary, one line per engine that
applies it, the notes (how the bound was read, what the run does not tell, each load
switch's caveats from the registry) and the files of its folder: each switch's setting
as its engine's `Writer` (`specload.engines`) writes it, and a README.md.
`study_recommendation` does the same for a multi-k study's schedule. The text never says
"always" or "never" while a rung sits inside the noise band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from specload import engines
from specload.engines import metrics as engine_metrics
from specload.engines import schedule as es
from specload.report.crossover import (
    ALWAYS,
    CROSSES,
    INCONCLUSIVE,
    NEVER,
    SLO_UNMET,
    Crossover,
    Level,
)
from specload.report.recommend import README_FILE, RECOMMENDED_DIR, Bound, Decision


@dataclass(slots=True)
class Recommendation:
    """A decision in words, and the files of its folder (name -> text)."""

    decision: Decision
    basis: str  # "system tok/s" or "SLO goodput (...)"
    summary: str
    title: str = ""  # the README's heading
    folder: str = RECOMMENDED_DIR  # where `render` writes its files
    lines: list[str] = field(default_factory=list)  # per-engine advice, one line each
    notes: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def as_dict(self, folder: str = RECOMMENDED_DIR) -> dict[str, Any]:
        d = self.decision
        return {
            "verdict": d.verdict, "basis": self.basis, "summary": self.summary,
            "bound": d.bound.as_dict() if d.bound else None,
            "schedule": ([[first, t.last, t.k] for first, t in
                          zip(es.starts(d.tiers), d.tiers, strict=True)]
                         if d.tiers else None),
            "engine": d.engine, "engine_source": d.engine_source,
            "load_aware_engine": d.load_aware,
            **{switch.writer.summary_key: d.settings.get(e.id)
               for e, switch in engines.switches() if switch.writer.summary_key},
            "lines": self.lines, "notes": self.notes,
            "files": [f"{folder}/{name}" for name in self.files],
        }


def _cs(values: Sequence[Level]) -> str:
    return ", ".join(str(v) for v in values)


def _bound_words(bound: Bound) -> str:
    if bound.batch is None:
        return (f"speculate up to {bound.last_on} concurrent requests and turn it off "
                f"above (no running-requests gauge: the bound is in concurrency C, which "
                f"is the batch size only while nothing queues)")
    return (f"speculate up to batch size {bound.last_on} and turn it off from "
            f"{bound.last_on + 1}")


def _num(c: float) -> str:
    return f"{c:.0f}" if float(c).is_integer() else f"{c:.1f}"


def _at(c: float, batch: float | None, label: str = "C") -> str:
    return f"{label} = {_num(c)}" + (f", batch size {batch:.1f}" if batch is not None else "")


def _verdict_text(cross: Crossover, bound: Bound | None, top_batch: float | None) -> str:
    ties = f"within the noise band ({cross.band}) at C = {_cs(cross.ties)}"
    every = ("every concurrency where an arm meets the SLO" if cross.unmet else
             "every concurrency measured")
    if cross.verdict == ALWAYS:
        return (f"Speculation pays off at {every} (up to {_at(cross.below or 0, top_batch)}): "
                f"keep it on; extend the ladder to find where it stops.")
    if cross.verdict == NEVER:
        return f"Speculation is behind at {every} (from C = {cross.above}): turn it off."
    if cross.verdict == CROSSES and bound and cross.c_star is not None:
        text = f"Speculation pays off up to {_at(cross.c_star, bound.batch, 'C*')}: " \
               f"{_bound_words(bound)}."
        return text + (f" Neither setting is measurably better {ties}." if cross.ties else "")
    if cross.verdict == INCONCLUSIVE and bound and cross.off_above:
        return (f"Speculation pays off up to {_at(bound.concurrency, bound.batch)}; above, "
                f"the speedup is {ties}: {_bound_words(bound)}, or keep it on, as the noise "
                f"allows; re-measure with repeats to decide.")
    if cross.verdict == INCONCLUSIVE and cross.speculate_to is not None:
        below = _cs(sorted(set(cross.behind) | set(cross.ties)))
        return (f"Speculation pays off at the largest concurrency measured (C = "
                f"{cross.below}) but not at C = {below} (the curve is not monotone): keep "
                f"it on, and re-measure those rungs with repeats.")
    if cross.verdict == INCONCLUSIVE:
        behind = f", behind at C = {_cs(cross.behind)}" if cross.behind else ""
        return (f"Speculation never measurably pays off ({ties}{behind}): keep it off, or "
                f"re-measure with repeats.")
    if cross.verdict == SLO_UNMET:
        return "Neither arm meets the SLO at any concurrency measured: no recommendation."
    return "No concurrency was measured by both arms: no recommendation."


def _deployment_text(engine: str, cross: Crossover, bound: Bound | None) -> str:
    own = engines.REGISTRY.get(engine)
    head = (f"{engines.name_of(engine)} has no setting that turns speculation off by load"
            + ("" if own is not None and own.adaptive else " nor an adaptive mode of its own")
            + ".")
    if bound is None or not cross.off_above:
        what = "keep speculation on" if cross.speculate_to is not None else \
            "run it without speculation (drop the draft-model flags)"
        return f"{head} Nothing to switch here: {what}."
    gate = (f"its running requests are below {bound.last_on + 1}" if bound.batch is not None
            else f"fewer than {bound.last_on + 1} requests are in flight to it")
    return (f"{head} Instead run two deployments, one with speculation for low load and one "
            f"without for high load, and route by load: send a request to the spec-on "
            f"deployment while {gate}, else to the spec-off one. If load changes slowly, "
            f"one deployment restarted with or without speculation by load level also "
            f"works: with it while concurrency stays below C = {_num(bound.concurrency)}.")


def _bound_notes(bound: Bound, engine: str | None) -> list[str]:
    """How the bound was read: a cap above C*, the gauge, a capped spec-on server."""
    notes = []
    if bound.capped is not None:
        notes.append(
            f"The spec-on server ran at most about {bound.capped} requests above C* (a "
            f"running-request cap or a full KV cache): there its batch size stops following "
            f"C, so a batch-size schedule cannot tell higher loads apart; the bound, batch "
            f"size {bound.last_on}, stays below that cap.")
    if bound.batch is not None:
        notes.append(
            f"Batch sizes are the {bound.through} server's mean running requests "
            f"({' / '.join(engine_metrics.names_of('running', engine))}) at C*, "
            "interpolated in log C between the rungs around it.")
    if bound.spec_on_batch is not None and bound.batch is not None:
        notes.append(
            f"At C* the spec-on server ran only {bound.spec_on_batch:.1f} requests (a "
            f"running-request cap under speculation) while the spec-off server ran "
            f"{bound.batch:.1f}. A server that switches speculation by batch size admits "
            f"requests with its plain cap, as the spec-off server did, so the bound is "
            f"the spec-off server's batch size at C*. If your engine keeps the lower cap "
            f"while the schedule is on, it never sees a batch above "
            f"{round(bound.spec_on_batch)}: run the verification arm to check.")
    return notes


def _schedule(rec: Recommendation) -> None:
    """The schedule in every load switch's syntax: files, one line each, caveats."""
    d, folder = rec.decision, rec.folder
    tiers, spec, engine = d.tiers or (), d.setup.spec, d.engine
    switches = engines.switches()
    for _, switch in switches:
        rec.files |= switch.writer.files(tiers, spec, folder)
    own = [(e, switch) for e, switch in switches if e.id == engine]
    rec.lines += [f"{e.name} {switch.writer.apply(tiers, spec, folder)}"
                  for e, switch in own or switches]
    rec.notes += [f"The arm's start command: {problem}." for problem in spec.problems]
    ks = [t.k for t in tiers]
    unknown = [(es.K_PLACEHOLDER, "your draft length")] if es.K_PLACEHOLDER in ks else []
    if not (spec.model or spec.method in es.NO_DRAFT_MODEL):
        unknown.append((es.MODEL_PLACEHOLDER, "your draft model"))
    rec.notes += [f"Replace {mark} with {what}: the run does not record it."
                  for mark, what in unknown]
    for e, switch in switches:
        methods = switch.methods
        if (methods is not None and spec.method not in (None, *methods)
                and engine in (None, e.id)):
            rec.notes.append(f"The arm ran method {spec.method}: {e.name}'s load switch "
                             f"takes only {' or '.join(m.upper() for m in methods)}.")
    # Every engine's file is written, so every engine's caveats go along; its own first.
    for e, switch in sorted(switches, key=lambda pair: pair[0].id != engine):
        rec.notes += [f"{e.name}: {note}" for note in switch.caveats]


def readme(rec: Recommendation) -> str:
    """The README.md of a recommendation's folder."""
    d, folder = rec.decision, rec.folder
    out = [f"# Recommended speculation setting: {rec.title}", "",
           f"Verdict ({d.verdict}, on {rec.basis}): {rec.summary}", ""]
    if d.engine:
        out += [f"Engine: {engines.name_of(d.engine)} ({d.engine_source}).", ""]
    if d.tiers:
        out += [f"Schedule: {es.describe(d.tiers)}.", ""]
    if rec.files:
        out += ["| file | use |", "|---|---|"]
        uses = {name: use for _, switch in engines.switches()
                for name, use in switch.writer.uses(folder).items()}
        out += [f"| {name} | {uses[name]} |" for name in rec.files if name in uses]
        out.append("")
    if rec.lines:
        out += [f"- {line}" for line in rec.lines] + [""]
    if rec.notes:
        out += ["Notes:", ""] + [f"- {note}" for note in rec.notes]
    return "\n".join(out).rstrip() + "\n"


def recommendation(d: Decision, title: str, folder: str = RECOMMENDED_DIR) -> Recommendation:
    """A pair's decision in words and files; `folder` is where `render` writes them."""
    cross = d.crossover
    assert cross is not None, "a pair's decision has its crossover"
    summary = _verdict_text(cross, d.bound, d.top_batch)
    if cross.unmet:
        summary += f" Neither arm meets the SLO at C = {_cs(cross.unmet)}."
    basis = "system tok/s"
    if d.slo:
        basis = f"SLO goodput ({d.slo.describe()})"
        summary = f"On {basis}: {summary}"
    rec = Recommendation(d, basis, summary, title, folder)
    if d.bound:
        rec.notes += _bound_notes(d.bound, d.engine)
    if d.action == "route" and d.engine is not None:
        rec.lines.append(_deployment_text(d.engine, cross, d.bound))
    elif d.action == "schedule":
        _schedule(rec)
        entry = engines.get(d.engine)
        if entry is not None and entry.generic:
            rec.notes.append(_deployment_text(entry.id, cross, d.bound))
    elif d.action == "keep_on":
        rec.lines.append("Keep speculation on as configured: no per-batch-size schedule "
                         "is needed up to the largest concurrency measured.")
    elif d.action == "turn_off":
        rec.lines.append("Serve without speculation (no --speculative-config / "
                         "--speculative-algorithm / speculative_config).")
    if rec.lines or rec.notes:
        rec.files[README_FILE] = readme(rec)
    return rec


def with_k0_tax(rec: Recommendation, lines: Sequence[str]) -> None:
    """The verification arms' k = 0 tax, where it is beyond the noise, in the
    recommendation whose schedule they ran (its README written again)."""
    if lines:
        rec.lines += lines
        rec.files[README_FILE] = readme(rec)


def study_recommendation(d: Decision, summary: str, title: str,
                         folder: str) -> Recommendation:
    """A multi-k study's schedule in words and files (`summary` names its bands)."""
    rec = Recommendation(d, "system tok/s", summary, title, folder)
    if d.action == "schedule":
        _schedule(rec)
    else:
        rec.lines.append("Serve without speculation: k = 0 (spec-off) is best or tied at "
                         "every rung.")
    rec.files[README_FILE] = readme(rec)
    return rec
