"""A sweep over four hosts on one machine: clocks measured and corrected, a load machine lost.

Network namespaces on a bridge (`tests/support/netns.py`): the master runs the sweep, two
load machines run `specload worker` with 2 processes each, one of them with its clock
3 s ahead (`SPECLOAD_CLOCK_OFFSET_S`, the test seam), and the fourth host serves the
simulator with its ground-truth trace. Mid-way through the top rung the other load
machine dies (every process in it SIGKILLed). Checked against the trace: tok/s per
rung, the measured offset, the rows the dead machine took with it, and that its users
restarted on the surviving machine. Needs root (skipped otherwise); about 90 s.
"""

from __future__ import annotations

import csv
import json
import shutil
import socket
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specload.report import render
from specload.report.client_metrics import measure
from specload.report.run_files import read_rep
from specload.report.windows import Window
from specload.runfiles.records import SERVER_TRACE_NAME
from specload.runner.sim_launcher import SimOptions, SimProcess, launch
from tests.support import netns
from tests.support.sweeps import BackgroundSweep, read_csv, read_manifest, wait_for
from tests.support.workers import SpecloadWorker

pytestmark = pytest.mark.slow

LADDER = [1, 50, 250]
WARMUP_S, MEASURE_S = 2.0, 12.0
OFFSET_S = 3.0
KILL_INTO_RUNG_S = WARMUP_S + 1.0  # a second into the top rung's measure window
# Locust marks a dead worker missing 4-7 s after its last heartbeat (one at a time: the
# re-dispatch after the first holds its heartbeat loop up) and re-dispatches at once.
REDISPATCH_S = 2.0
PROFILE = "h100-llama8b-eagle3"


@pytest.fixture
def hosts() -> Iterator[dict[str, netns.Host]]:
    reason = netns.unavailable()
    if reason:
        pytest.skip(reason)
    with netns.Network() as net:
        yield {role: net.add(role) for role in ("master", "load-a", "load-b", "server")}


def scenario(master: netns.Host, url: str) -> dict[str, Any]:
    return {
        "name": "multihost",
        "ladder": LADDER,
        "warmup_s": WARMUP_S,
        "measure_s": MEASURE_S,
        "drain_s": 10,
        "request": {"max_tokens": 24, "ignore_eos": True},
        "distributed": {"workers": 4, "master_bind_host": master.ip,
                        "master_bind_port": 5557, "workers_wait_s": 60},
        "arms": [{"name": "spec-on", "url": url, "spec": "on"}],
    }


def client_ids(host: netns.Host) -> set[str]:
    """The `client_id` every process of a host would record (host name and pid)."""
    name = socket.gethostname()
    return {f"{name}-{pid}" for pid in host.pids()}


def trace_tok_s(trace: list[dict[str, Any]], w: Window, ids: set[str] | None = None) -> float:
    tokens = sum(n for rec in trace if ids is None or rec["request_id"] in ids
                 for t, n in rec.get("chunks") or () if w.start <= t < w.end)
    return tokens / w.length


def start_sim(server: netns.Host, folder: Path) -> SimProcess:
    options = SimOptions.of(profile=PROFILE, spec="on", host=server.ip, port=0,
                            trace_path=folder / "trace.jsonl", wrapper=server.command(()))
    return launch(options, folder / "sim.log")


def test_clocks_corrected_and_a_lost_load_machine(hosts, tmp_path: Path) -> None:
    master, load_a, load_b = hosts["master"], hosts["load-a"], hosts["load-b"]
    sim = start_sim(hosts["server"], tmp_path)
    try:
        sc = tmp_path / "multihost.yaml"
        sc.write_text(json.dumps(scenario(master, sim.url)))
        SpecloadWorker(tmp_path, 5557, 2, master.ip, load_a.command(()))
        worker_b = SpecloadWorker(tmp_path, 5557, 2, master.ip, load_b.command(()),
                                  env={"SPECLOAD_CLOCK_OFFSET_S": str(OFFSET_S)})
        sweep = BackgroundSweep([str(sc), "--out", "out"], tmp_path,
                                wrapper=master.command(()))
        arm_dir = sweep.run_dir() / "spec-on"
        rungs_file = arm_dir / "locust_rungs.csv"
        wait_for(lambda: rungs_file.exists(), 90, "the first rung")
        ids_a, ids_b = client_ids(load_a), client_ids(load_b)
        wait_for(lambda: len(read_csv(rungs_file)) >= 2, 90, "the C=50 rung")
        time.sleep(KILL_INTO_RUNG_S)
        killed_at = time.time()  # one kernel clock: the master's and the server's
        load_a.kill_all()
        assert sweep.wait(timeout=120) == 0, sweep.text() + worker_b.text()
    finally:
        sim.stop()
    out = sweep.text()
    run_dir = arm_dir.parent

    # --- the clocks: measured, recorded, and the rows put on the master's clock --------
    (rep,) = read_manifest(run_dir)["arms"][0]["reps"]
    clocks = {c["client_id"]: c for c in rep["clocks"]}
    shifted = [c for cid, c in clocks.items() if cid in ids_b]
    plain = [c for cid, c in clocks.items() if cid in ids_a]
    assert len(shifted) == 2 and len(plain) == 2, clocks
    for c in shifted:
        assert abs(c["offset_min_s"] - OFFSET_S) < 0.005
        assert abs(c["offset_max_s"] - OFFSET_S) < 0.005
    for c in plain:
        assert abs(c["offset_s"]) < 0.005
    trace = [json.loads(line) for line in sim.trace_path.read_text().splitlines()]
    arrival = {rec["request_id"]: rec["arrival"] for rec in trace}
    with (arm_dir / "locust_requests.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    raw_b = [float(r["start"]) - arrival[r["request_id"]] for r in rows
             if r["client_id"] in ids_b and r["request_id"] in arrival]
    assert abs(statistics.median(raw_b) - OFFSET_S) < 0.005  # as the worker stamped them
    # its kernel receive stamps moved with its clock: chunks arrive after their send
    ttfts = [float(r["ttft_ms"]) for r in rows if r["client_id"] in ids_b and r["ttft_ms"]]
    assert ttfts and min(ttfts) > 0 and max(ttfts) < 5000

    # --- tok/s per rung against the server's trace (the report's own comparison) -------
    shutil.copy(sim.trace_path, arm_dir / SERVER_TRACE_NAME)
    report = render.build(run_dir)
    per_rung = report.per_rep.set_index("concurrency")
    data = read_rep(arm_dir / "locust")
    assert len(data.requests) == len(rows)  # the same rows, in the same order
    aligned_b = data.requests[data.requests["client_id"].isin(ids_b)]
    sent = [s - arrival[r["request_id"]] for s, r in zip(data.requests["start"], rows,
                                                          strict=True)
            if r["client_id"] in ids_b and r["request_id"] in arrival]
    assert abs(statistics.median(sent)) < 0.005  # on the master's (and server's) clock
    windows = {int(r.concurrency): Window(int(r.rung), int(r.concurrency),
                                          float(r.window_start),
                                          float(r.window_start) + float(r.window_s))
               for r in report.per_rep.itertuples()}
    lines = []
    for c in LADDER[:2]:
        ratio = per_rung.at[c, "trace_ratio"]
        lines.append(f"C={c}: {per_rung.at[c, 'output_tok_s']:.1f} tok/s, trace "
                     f"{per_rung.at[c, 'trace_tok_s']:.1f} ({100 * (ratio - 1):+.2f}%)")
        assert abs(ratio - 1) < 0.02, lines[-1]
    # the top rung lost a machine: compare what the surviving one measured with what
    # the server sent it
    top = windows[LADDER[-1]]
    b_requests = {r["request_id"] for r in rows if r["client_id"] in ids_b}
    client = float(measure(aligned_b.reset_index(drop=True), [top]).iloc[0]["output_tok_s"])
    server = trace_tok_s(trace, top, b_requests)
    lines.append(f"C={LADDER[-1]}, load-b only: {client:.1f} tok/s, trace {server:.1f} "
                 f"({100 * (client / server - 1):+.2f}%); all: "
                 f"{per_rung.at[LADDER[-1], 'output_tok_s']:.1f} vs trace "
                 f"{per_rung.at[LADDER[-1], 'trace_tok_s']:.1f}")
    assert abs(client / server - 1) < 0.02, lines[-1]

    # --- the lost machine: noticed, flagged, at most 2 s of its rows gone ---------------
    events = [e for e in rep["worker_events"] if e["event"] == "lost"]
    assert {e["client_id"] for e in events} == {cid for cid in clocks if cid in ids_a}
    assert sum("warning: worker" in ln and ": lost:" in ln for ln in out.splitlines()) == 2
    flagged = {w["concurrency"] for w in report.warnings if w["kind"] == "worker_lost"}
    assert flagged == {LADDER[-1]}
    recorded = {r["request_id"] for r in rows}
    lost = [rec for rec in trace if rec["request_id"] not in recorded]
    cut = [rec for rec in lost if rec["finish_reason"] == "abort"]  # in flight: no row ever
    done = [rec for rec in lost if rec["finish_reason"] != "abort"]  # rows not shipped yet
    # at most one request in flight per user, and load-a ran two of the four processes:
    # Locust splits 250 users 63/63/62/62, in an order of its own, so 125 or 126
    assert 0 < len(cut) <= 2 * -(-LADDER[-1] // 4)  # two processes of at most 63
    ages = sorted(killed_at - rec["end"] for rec in done)
    assert all(age < 2.0 for age in ages), ages
    last_a = max(float(r["end"]) for r in rows if r["client_id"] in ids_a)
    assert killed_at - last_a < 2.0
    lines.append(f"killed at {killed_at:.3f}: {len(cut)} requests in flight cut; "
                 f"{len(done)} finished requests without a row (ended at most "
                 f"{max(ages, default=0):.2f} s before the kill); its last recorded row "
                 f"ended {killed_at - last_a:.2f} s before")

    # --- its users restarted on the surviving machine, within the rung ------------------
    assert data.client is not None
    settled = max(e["ts"] for e in events) + REDISPATCH_S
    assert settled < top.end - 1, "the rung ended before the users could come back"
    after = data.client[(data.client["ts"] >= settled) & (data.client["ts"] <= top.end)
                        & data.client["client_id"].isin(ids_b)]
    assert len(after) and set(after["users"]) == {LADDER[-1] // 2}, after
    marked = ", ".join(f"{e['ts'] - killed_at:.1f}" for e in events)
    lines.append(f"lost workers marked missing {marked} s after the kill; each surviving "
                 f"process ran {LADDER[-1] // 2} users from {settled - killed_at:.1f} s")
    offsets = ", ".join(f"{c['offset_s'] * 1e3:+.2f} ms (±{c['uncertainty_max_s'] * 1e3:.2f}, "
                        f"{c['rounds']} rounds, {c['doubtful_rounds']} doubtful left out)"
                        for c in shifted + plain)
    print(f"\nmeasured offsets: {offsets}\n" + "\n".join(lines))
