#!/usr/bin/env python3
"""Make docs/workloads.md's two curves from real sweeps of the simulator; regenerate and
commit them with any change to the simulator's cost model, its prefix cache or these
scenarios:

    python scripts/workload_curves.py                    # three sweeps, ~18 minutes
    python scripts/workload_curves.py --long RUN --think RUN --no-think RUN

1. Long context (`scenarios/long-context.yaml`, the MagicDec profile): the speedup per
   rung, which stays above 1 at every rung, and the prefix cache hit rate per rung.
   Picture: `docs/img/long-context-speedup.png`.
2. Think time (`scenarios/seed-glm-sessions.yaml`, seed-glm): the same sessions sweep
   run twice, with think time 0 (the scenario with `think_time: 0`, named
   `seed-glm-sessions-no-think`) and with its lognormal 5 s think time, and C* of each
   in sessions. Both speedup curves in one picture, as `specload compare` overlays
   them: `docs/img/think-time-speedup.png`; the compare page is written too.

Sweeps run one after the other (each is CPU-light but long). The tables printed at the
end are what docs/workloads.md shows. Needs Debian's `chromium` on the PATH, as
`make_pictures.py` does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from make_pictures import screenshot
from plotly import graph_objects as go

from specload.config.scenario import load_scenario
from specload.report import compare, figures, render
from specload.report.crossover import PairResult
from specload.sim.core import EngineCore
from specload.sim.profile import load_profile
from specload.sim.scheduler import Seq
from specload.sim.textgen import CHARS_PER_TOKEN

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "scenarios" / "long-context.yaml"
SESSIONS = REPO / "scenarios" / "seed-glm-sessions.yaml"
OUT = REPO / "docs" / "img"
SIZE = (1000, 520)


def sweep(scenario: Path, out: Path) -> Path:
    """Run one sweep into `out`; returns its run folder."""
    done = subprocess.run([sys.executable, "-m", "specload.cli", "sweep", str(scenario),
                           "--out", str(out)], text=True, stdout=subprocess.PIPE)
    print(done.stdout)
    if done.returncode != 0:
        sys.exit(f"the sweep of {scenario.name} failed")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("run folder: "))
    return Path(line.removeprefix("run folder: ").split(" (")[0])


def no_think_scenario(folder: Path) -> Path:
    """The sessions scenario with think time 0, under its own name."""
    data = yaml.safe_load(SESSIONS.read_text())
    data["name"] = "seed-glm-sessions-no-think"
    data["workload"]["think_time"] = 0
    path = folder / "seed-glm-sessions-no-think.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def virtual_tok_s(profile: str, mode: str, users: int, prompt: int, shared: int,
                  output: int) -> float:
    """The simulator's own steady-state tok/s for the long-context workload in virtual
    time (no clock, so no engine lag): users closed-loop, prompts sharing `shared` tokens
    and distinct after them, measured over 3C completions after 2C."""
    core = EngineCore(load_profile(profile), mode, None, 0)  # type: ignore[arg-type]
    head = "d" * (shared * CHARS_PER_TOKEN)
    sent = 0

    def add() -> None:
        nonlocal sent
        sent += 1
        tail = f"{sent:x}".rjust(CHARS_PER_TOKEN, "-") * (prompt - shared)
        core.add(Seq(key=None, prompt_tokens=prompt, target_tokens=output,
                     blocks=core.block_keys(head + tail)))

    for _ in range(users):
        add()
    now, done, tokens, start = 0.0, 0, 0, None
    while done < 5 * users:
        result = core.step()
        assert result is not None
        now += result.cost.total
        for seq, n in result.emitted:
            tokens += n if start is not None else 0
            if seq.finished:
                done += 1
                add()
                start = now if done == 2 * users else start
    assert start is not None
    return tokens / (now - start)


def virtual_speedups(scenario: Path) -> dict[int, float]:
    """Per rung of a users scenario with two sim arms: spec-on / spec-off in virtual time."""
    sc = load_scenario(scenario)
    on, off = (next(a.sim for a in sc.arms if a.sim and a.sim.spec == s) for s in ("on", "off"))
    assert on is not None and off is not None and sc.request.max_tokens
    # a fixed prompt length (a scenario may give a distribution; this one does not)
    shape = (int(str(sc.request.prompt_tokens)), sc.request.shared_prefix_tokens,
             sc.request.max_tokens)
    return {c: virtual_tok_s(on.profile, "on", c, *shape)
            / virtual_tok_s(off.profile, "off", c, *shape) for c in sc.ladder}


def picture(fig: go.Figure, title: str, name: str, folder: Path) -> None:
    fig.update_layout(width=SIZE[0], height=SIZE[1], margin={"t": 60, "r": 30}, title=title)
    page = folder / f"{name}.html"
    fig.write_html(page, include_plotlyjs=True, full_html=True,
                   config={"displayModeBar": False, "staticPlot": True})
    screenshot(page.as_uri(), OUT / f"{name}.png", SIZE, folder / f"profile-{name}")


def pair_of(report: render.Report, run: Path) -> PairResult:
    if not report.pairs:
        sys.exit(f"{run}: no spec-on/spec-off pair")
    return report.pairs[0]


def rung_table(report: render.Report, pair: PairResult, unit: str) -> str:
    """Markdown: per rung the requests in flight, the batch, tok/s of both arms, speedup
    and the prefix cache hit rate (both arms' "on / off")."""
    summary = report.summary.set_index(["arm", "concurrency"])
    lines = [f"| {unit} | in flight on / off | batch on / off | tok/s on | tok/s off "
             "| speedup | cache hits |", "|---|---|---|---|---|---|---|"]
    for _, row in pair.speedup.iterrows():
        c = int(row["concurrency"])
        on, off = summary.loc[(pair.on.name, c)], summary.loc[(pair.off.name, c)]
        lines.append(f"| {c} | {on['achieved_concurrency']:.1f} / "
                     f"{off['achieved_concurrency']:.1f} | {on['server_running_mean']:.1f} / "
                     f"{off['server_running_mean']:.1f} | {row['output_tok_s_on']:.0f} | "
                     f"{row['output_tok_s_off']:.0f} | {row['speedup']:.2f} | "
                     f"{on['prefix_hit_rate']:.2f} / {off['prefix_hit_rate']:.2f} |")
    return "\n".join(lines)


def c_star_words(pair: PairResult) -> str:
    cross = pair.crossover
    if cross.c_star is None:
        return f"no C* ({cross.verdict})"
    return f"C* = {cross.c_star:.1f} (between {cross.below} and {cross.above})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", default=None, help="a finished long-context sweep")
    parser.add_argument("--think", default=None, help="a finished seed-glm-sessions sweep")
    parser.add_argument("--no-think", default=None,
                        help="a finished seed-glm-sessions-no-think sweep")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="specload-workload-curves-"))
    long_run = Path(args.long) if args.long else sweep(LONG, folder / "runs")
    think_run = Path(args.think) if args.think else sweep(SESSIONS, folder / "runs")
    no_think_run = (Path(args.no_think) if args.no_think
                    else sweep(no_think_scenario(folder), folder / "runs"))

    long_report = render.build(long_run)
    long_pair = pair_of(long_report, long_run)
    picture(figures.speedup([long_pair]), "Long context (8000-token prompts, MagicDec "
            "profile): speculation pays at every rung", "long-context-speedup", folder)

    runs = [compare.Run("no think time", render.build(no_think_run)),
            compare.Run("think 5 s", render.build(think_run))]
    pairs = [p for run in runs for p in compare.renamed(run)[1]]
    fig = figures.speedup(pairs)
    fig.update_xaxes(title_text="concurrent chat sessions")
    marks = [t for t in fig.data if t.name.startswith("C* =")]
    for mark, position in zip(marks, ("top left", "top right"), strict=False):
        mark.textposition = position  # the two C* labels sit close together
    picture(fig, "seed-glm chat sessions: think time moves C* up", "think-time-speedup",
            folder)
    html_path, _ = compare.write(runs, compare.differences(runs), folder / "compare")

    print(f"\nlong context ({long_run}):\n{rung_table(long_report, long_pair, 'C')}")
    print("the simulator in virtual time (no engine lag): " + ", ".join(
        f"C={c} {s:.2f}" for c, s in virtual_speedups(LONG).items()))
    for run, path in zip(runs, (no_think_run, think_run), strict=True):
        pair = pair_of(run.report, path)
        print(f"\n{run.label} ({path}): {c_star_words(pair)}\n"
              f"{rung_table(run.report, pair, 'sessions')}")
    print(f"\ncompare page: {html_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
