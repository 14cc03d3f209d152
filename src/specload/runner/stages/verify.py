"""The verification stage: once the compared arms are done, add the `verify` arm and run it.

It asks the analysed run for the schedule to verify (`report.render.schedule_to_verify`),
writes its files and adds the arm (`runner/verify_arm.py`) to the manifest, whose one pass
then runs it through the same ladder. A `url:` arm is set up by the user, so the stage
prints what to do and `--resume RUN_DIR --arms verify` runs it. Nothing is added when the
scenario does not ask for it, already has the arm, or a compared arm did not finish.
"""

from __future__ import annotations

from specload.runner.attempt import Sweep, say
from specload.runner.verify_arm import (
    VERIFY_ARM,
    add_arm,
    hand_steps,
    has_verify_arm,
    verify_arm,
    write_files,
)


def _pair_done(sweep: Sweep) -> bool:
    arms = [a for a in sweep.manifest.arms if a.role in ("spec_on", "spec_off")]
    return {a.role for a in arms} == {"spec_on", "spec_off"} and all(
        a.status == "done" for a in arms)


class Verify:
    """The stage of the verification arm: one pass, if it is to run."""

    def __init__(self) -> None:
        self.added = False

    def arms(self, sweep: Sweep) -> list[str]:
        return [VERIFY_ARM]

    def next(self, sweep: Sweep) -> str | None:
        if self.added or not sweep.scenario.verify_default or has_verify_arm(sweep.scenario):
            return None
        self.added = True
        if not _pair_done(sweep):
            say("verify: skipped, the spec-on and spec-off arms did not all finish")
            return None
        report = sweep.analysed("verify: skipped")
        if report is None:
            return None
        from specload.report.render import schedule_to_verify

        found = schedule_to_verify(report)
        if found is None:
            say("verify: no schedule to verify (the recommendation below says why)")
            return None
        ranges = found.ranges()
        if not all(isinstance(k, int) for _, _, k in ranges):
            say("verify: the schedule's draft length is unknown (set the arm's `k`)")
            return None
        schedule = [[int(v) for v in r] for r in ranges]
        folder = write_files(sweep.run_dir, found)
        on = next(a for a in sweep.scenario.arms if a.arm_role == "spec_on")
        arm = verify_arm(on, found, folder)
        sweep.scenario, entry = add_arm(sweep.scenario, sweep.manifest.scenario, arm, schedule)
        sweep.manifest.arms.append(entry)
        sweep.save()
        if entry.by_hand:
            for line in hand_steps(sweep.run_dir, folder, arm.url):
                say(line)
            return None
        sweep.selected.append(VERIFY_ARM)
        say(f"[{VERIFY_ARM}] the recommended schedule ({found.folder}): {schedule}")
        return "the recommended schedule"
