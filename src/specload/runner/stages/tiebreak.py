"""The tie-break stage: while a pair's repeats disagree on the verdict, one more repeat.

After the planned rounds, the run is analysed (`report.render.unsettled_pairs`); while
a spec-on/spec-off pair's repeats hold no settled verdict (`report.crossover.agreement`:
the same bracket for C*, or the same "always"/"never", in more repeats than any other,
at least two), every compared arm runs one more repeat, in a round like the planned
ones, up to `scenario.tiebreak_repeats` of them. The added repeats are ordinary entries
of the manifest, so a resumed run runs one that was cut short and knows how many it
has added.
"""

from __future__ import annotations

from specload.runfiles.manifest import ArmEntry, RepEntry
from specload.runner.attempt import Sweep, say
from specload.runner.manifest_entries import rep_dir


def added(arms: list[ArmEntry], planned: int) -> int:
    """The tie-break repeats the arms have beyond the planned ones."""
    return max((len(a.reps) for a in arms), default=planned) - planned


class TieBreak:
    """The stage of tie-break repeats of the spec-on and spec-off arms, one per pass."""

    def __init__(self) -> None:
        self.rep: int | None = None  # the repeat under way

    def arms(self, sweep: Sweep) -> list[str]:
        return [a.name for a in sweep.manifest.arms if a.role in ("spec_on", "spec_off")]

    def next(self, sweep: Sweep) -> str | None:
        budget, planned = sweep.scenario.tiebreak_repeats, sweep.scenario.repeats
        arms = [sweep.manifest.arm(n) for n in self.arms(sweep)]
        if not budget:
            return None
        if any(a.status != "done" for a in arms):
            say(f"tie-break: repeat {self.rep} did not finish on every arm; the report "
                "gives the repeats' range" if self.rep else
                "tie-break: not tried, an arm did not finish every repeat")
            return None
        from specload.report.render import unsettled_pairs

        report = sweep.analysed("tie-break: not tried")
        if report is None:
            return None
        split, used = unsettled_pairs(report), added(arms, planned)
        if not split:
            if used:
                say(f"tie-break: the repeats agree after {used} more")
            return None
        if used >= budget:
            say(f"tie-break: {'; '.join(split)} after {used} more repeat(s) "
                f"(tiebreak_repeats: {budget}); the report gives their range")
            return None
        self.rep = planned + used + 1
        say(f"tie-break: {'; '.join(split)}; running repeat {self.rep} of every arm "
            f"({used + 1} of at most {budget} more)")
        for arm in arms:
            arm.reps.append(RepEntry(rep=self.rep, dir=rep_dir(arm.name, self.rep, planned)))
        sweep.save()
        return f"tie-break repeat {self.rep}"
