"""Tie-break rounds: while a pair's repeats disagree on the verdict, one more repeat.

After the planned rounds, the run is analysed (`report.render.unsettled_pairs`); while
a spec-on/spec-off pair's repeats hold no settled verdict (`report.crossover.agreement`:
the same bracket for C*, or the same "always"/"never", in more repeats than any other,
at least two), every compared arm runs one more repeat, in a round like the planned
ones, up to `scenario.tiebreak_repeats` of them. The added repeats are ordinary entries
of the manifest, so a resumed run runs one that was cut short and knows how many it
has added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specload.manifest import ArmEntry, RepEntry
from specload.runner.attempt import Sweep, say
from specload.runner.manifest import rep_dir
from specload.runner.rounds import run_rounds

if TYPE_CHECKING:
    from specload.report.render import Report


def added(arms: list[ArmEntry], planned: int) -> int:
    """The tie-break repeats the arms have beyond the planned ones."""
    return max((len(a.reps) for a in arms), default=planned) - planned


def settle(sweep: Sweep, arms: list[ArmEntry]) -> Report | None:
    """Add repeats of `arms` while the run's pairs disagree and the budget allows; the
    run as last analysed (no repeat ran since), if it was."""
    budget, planned = sweep.scenario.tiebreak_repeats, sweep.scenario.repeats
    if not budget:
        return None
    if any(a.status != "done" for a in arms):
        say("tie-break: not tried, an arm did not finish every repeat")
        return None
    from specload.report.render import unsettled_pairs

    while (report := sweep.analysed("tie-break: not tried")) is not None:
        split, used = unsettled_pairs(report), added(arms, planned)
        if not split:
            if used:
                say(f"tie-break: the repeats agree after {used} more")
            return report
        if used >= budget:
            say(f"tie-break: {'; '.join(split)} after {used} more repeat(s) "
                f"(tiebreak_repeats: {budget}); the report gives their range")
            return report
        rep = planned + used + 1
        say(f"tie-break: {'; '.join(split)}; running repeat {rep} of every arm "
            f"({used + 1} of at most {budget} more)")
        for arm in arms:
            arm.reps.append(RepEntry(rep=rep, dir=rep_dir(arm.name, rep, planned)))
        sweep.save()
        run_rounds(sweep, arms)
        if any(a.status != "done" for a in arms):
            say(f"tie-break: repeat {rep} did not finish on every arm; the report gives "
                "the repeats' range")
            return None
    return None
