#!/usr/bin/env python3
"""Make the README's pictures from a real quickstart run; regenerate and commit them with
any change to the figures, the Tokens tab or the quickstart:

    python scripts/make_pictures.py                                # ~8 minutes
    python scripts/make_pictures.py --run reports/quickstart/<UTC timestamp>
    python scripts/make_pictures.py --run reports/llamacpp-cpu/<ts> --only speedup \
        --name llamacpp-speedup.png --title "..."             # docs/real-engines.md
    python scripts/make_pictures.py --run reports/acceptance-map/<ts> \
        --only acceptance-map --name acceptance-map.png --title "..."  # measurement.md
    python scripts/make_pictures.py --run reports/context-map/<ts> \
        --only context-map --name context-map.png --title "..."        # measurement.md

1. `docs/img/speedup.png`: the report's speedup curve with its noise band and C*
   (`report.figures.speedup`) of a quickstart sweep: `specload sweep
   scenarios/quickstart.yaml`, run here unless `--run` names a finished one. The figure
   goes into a standalone HTML page (plotly.js inlined) that headless Chromium renders
   to PNG: plotly's own PNG export needs kaleido, which is no dependency of specload and
   drives a Chrome of its own anyway (kaleido 1.x downloads one, which is offline here).
2. `docs/img/tokens-tab.png`: the web UI's Tokens tab while the quickstart's ladder runs
   against its spec-on simulated server, with the sweep's own Locust command (web UI
   instead of headless, `--processes 2`), captured once all but the last rung are
   complete.

Needs Debian's `chromium` on the PATH.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import plotly.graph_objects as go

from specload.config.scenario import load_scenario
from specload.report import figures, render
from specload.report.plotjs import Figure
from specload.runner.locust_proc import LoadMode, locust_command
from specload.runner.processes import free_port
from specload.runner.sim_launcher import SimOptions, launch

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "scenarios" / "quickstart.yaml"
OUT = REPO / "docs" / "img"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")
SPEEDUP_SIZE = (1000, 520)
TAB_SIZE = (1400, 1560)


def screenshot(url: str, png: Path, size: tuple[int, int], profile: Path,
               budget_ms: int = 8000) -> None:
    """A PNG of `url` in headless Chromium, after `budget_ms` of (virtual) page time."""
    browser = shutil.which("chromium") or sys.exit("chromium is not installed "
                                                   "(apt-get install -y chromium)")
    # At the lowest priority: a browser starting on the load machine takes the CPU from
    # the load process, whose lag the tab would then show (rightly) as saturation.
    done = subprocess.run(
        ["nice", "-n", "19", browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
         f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={budget_ms}",
         f"--screenshot={png}", url], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not png.is_file():
        sys.exit(f"chromium could not render {url}: {done.stderr[-1000:]}")
    print(f"wrote {png}")


def quickstart_sweep(folder: Path) -> Path:
    """Run the quickstart sweep into `folder`; returns its run folder."""
    done = subprocess.run([sys.executable, "-m", "specload.cli", "sweep", str(QUICKSTART),
                           "--out", str(folder)], text=True, stdout=subprocess.PIPE)
    print(done.stdout)
    if done.returncode != 0:
        sys.exit("the quickstart sweep failed")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("run folder: "))
    return Path(line.removeprefix("run folder: ").split(" (")[0])


QUICKSTART_TITLE = ("Speedup of speculative decoding on the quickstart's simulated server "
                    "(spec-on / spec-off tok/s)")


def figure_picture(drawn: Figure, folder: Path, name: str, title: str) -> None:
    """`docs/img/<name>`: one report figure, alone on a page, as Chromium renders it (the
    report's plotly.js data, through plotly.py for its page)."""
    fig = go.Figure(json.loads(drawn.to_json()))
    fig.update_layout(width=SPEEDUP_SIZE[0], height=SPEEDUP_SIZE[1], margin={"t": 60, "r": 30},
                      title=title)
    page = folder / f"{Path(name).stem}.html"
    fig.write_html(page, include_plotlyjs=True, full_html=True,
                   config={"displayModeBar": False, "staticPlot": True})
    screenshot(page.as_uri(), OUT / name, SPEEDUP_SIZE, folder / f"profile-{Path(name).stem}")


def speedup_picture(run_dir: Path, folder: Path, name: str = "speedup.png",
                    title: str = QUICKSTART_TITLE) -> None:
    report = render.build(run_dir)
    if not report.pairs:
        sys.exit(f"{run_dir}: no spec-on/spec-off pair to draw")
    figure_picture(figures.speedup(report.pairs), folder, name, title)


def map_picture(run_dir: Path, folder: Path, name: str, title: str,
                kind: str = "acceptance-map") -> None:
    """A run's acceptance map, or its context map (its sentence under the title)."""
    report = render.build(run_dir)
    if kind == "context-map":
        if report.context_map is None:
            sys.exit(f"{run_dir}: no context map (arms run at two or more `contexts`)")
        title += f"<br><sup>{report.context_map.sentence()}</sup>"
        figure_picture(figures.context_map([report.context_map]), folder, name, title)
        return
    if report.acceptance_map is None:
        sys.exit(f"{run_dir}: no acceptance map (spec-on arms set to two or more lengths)")
    figure_picture(figures.acceptance_map([report.acceptance_map]), folder, name, title)


def _live(base: str) -> dict:
    with urllib.request.urlopen(base + "/specload/live", timeout=5) as resp:
        return dict(json.loads(resp.read()))


def tokens_tab_picture(folder: Path) -> None:
    scenario = load_scenario(QUICKSTART)
    arm = next(a for a in scenario.arms if a.sim is not None and a.sim.spec == "on")
    assert arm.sim is not None
    sim = launch(SimOptions(arm.sim.settings()),
                 folder / "sim.log")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # --processes 2, as docs recommend for a watched run: the web UI serves the browser
    # from the master, so loading the page does not hold up the users' event loops
    cmd = locust_command(scenario, sim.url, folder / "live" / "locust", scenario.ladder,
                         LoadMode(processes=2))
    at = cmd.index("--headless")
    cmd[at:at + 1] = ["--autostart", "--autoquit", "5", "--web-port", str(port)]
    with (folder / "locust.log").open("w") as log:
        locust = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wanted = len(scenario.ladder) - 1
        print(f"waiting for {wanted} complete rungs of {scenario.ladder} ...", flush=True)
        while True:
            if locust.poll() is not None:
                sys.exit(f"locust stopped early; see {folder / 'locust.log'}")
            try:
                if len(_live(base).get("rungs", [])) >= wanted:
                    break
            except OSError:
                pass
            time.sleep(2)
        screenshot(f"{base}/?tab=tokens", OUT / "tokens-tab.png", TAB_SIZE,
                   folder / "profile-tab")
    finally:
        locust.send_signal(signal.SIGINT)
        try:
            locust.wait(timeout=30)
        except subprocess.TimeoutExpired:
            locust.kill()
        sim.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=None,
                        help="a finished quickstart sweep folder (default: run one)")
    parser.add_argument("--only", choices=("speedup", "tokens-tab", "acceptance-map",
                                           "context-map"), default=None)
    parser.add_argument("--name", default="speedup.png",
                        help="file name of the speedup picture under docs/img")
    parser.add_argument("--title", default=QUICKSTART_TITLE, help="the speedup picture's title")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="specload-pictures-"))
    if args.only in ("acceptance-map", "context-map"):
        if not args.run:
            sys.exit(f"--only {args.only} needs --run: a finished {args.only} sweep")
        map_picture(Path(args.run), folder, args.name, args.title, args.only)
        return 0
    if args.only is None or args.only == "speedup":
        speedup_picture(Path(args.run) if args.run else quickstart_sweep(folder), folder,
                        args.name, args.title)
    if args.only is None or args.only == "tokens-tab":
        tokens_tab_picture(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
