"""The master's view of its workers: offsets in the live rungs, clock rounds, lost workers.

A real Locust master runner (on a free loopback port, no worker connected) with worker
nodes entered by hand, as its client listener would after `client_ready`.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.runners import STATE_MISSING, STATE_RUNNING, WorkerNode

from specload.loadgen.live import LiveRungs, ProcessState, Span
from specload.loadgen.worker_watch import MSG_PONG, WorkerWatch, answer_ping
from specload.runfiles.clock_sync import Exchange
from specload.runfiles.records import CLOCK_COLUMNS, EVENTS_COLUMNS, REQUEST_COLUMNS
from specload.runner.processes import free_port

T = 1_700_000_000.0


@pytest.fixture
def master(tmp_path: Path) -> Iterator[Environment]:
    opts = get_parser().parse_args(["--csv", str(tmp_path / "run"), "--enable-rebalancing"])
    env = Environment(parsed_options=opts)
    runner = env.create_master_runner("127.0.0.1", free_port())
    for node in ("w-ahead", "w-true"):
        runner.clients[node] = WorkerNode(node, state=STATE_RUNNING)
    yield env
    runner.greenlet.kill(block=True)  # (quit() would wait half a second for workers)
    runner.server.close(linger=0)


def state(ts: float, watermark: float, in_flight: int = 1) -> ProcessState:
    return ProcessState(ts, watermark, in_flight, 0)


def row(start: float, end: float) -> list[object]:
    values = dict.fromkeys(REQUEST_COLUMNS, "")
    values.update(start=start, end=end, interrupted=0)
    return [values[c] for c in REQUEST_COLUMNS]


def live_with_window(env: Environment, end: float) -> LiveRungs:
    live = LiveRungs.for_env(env)
    live.reset(None)
    live.active = True
    live.add_window(Span(0, 2, T, end))
    return live


def test_a_clock_3_s_ahead_neither_completes_a_rung_early_nor_holds_it(master) -> None:
    live = live_with_window(master, T + 10)
    # w-ahead still runs a request it sent at master time T+9, stamped T+12 on its clock
    live.update("w-ahead", state(T + 14.5, T + 12.0))
    live.update("w-true", state(T + 11.5, T + 11.0))
    assert live.poll() == []  # its offset is not known yet: it has not reported
    live.set_offset("w-ahead", 3.0)
    live.set_offset("w-true", 0.0)
    assert live.complete_until() == pytest.approx(T + 9.0)
    assert live.poll() == []  # uncorrected, T+12 would have closed the rung
    live.update("w-ahead", state(T + 14.6, T + 13.5))  # master time T+10.5
    assert [line["rung"] for line in live.poll()] == [0]


def test_a_clock_3_s_behind_does_not_hold_a_rung_back(master) -> None:
    live = live_with_window(master, T + 10)
    live.set_offset("w-ahead", -3.0)
    live.set_offset("w-true", 0.0)
    live.update("w-ahead", state(T + 8.2, T + 8.1, in_flight=0))  # master time T+11.1
    live.update("w-true", state(T + 11.2, T + 11.2, in_flight=0))
    assert len(live.poll()) == 1


def test_rows_wait_for_their_workers_offset(master) -> None:
    live = live_with_window(master, T + 10)
    live.add_rows([row(T + 3.5, T + 5.0), row(T + 4.0, T + 6.0)], "w-ahead")
    assert live.completed_since(T) == 0
    live.set_offset("w-ahead", 3.0)
    assert live.completed_since(T + 0.4) == 2 and live.completed_since(T + 0.8) == 1
    live.add_rows([row(T + 1.0, T + 2.0)], "w-true")  # no offset yet: kept aside
    assert live.completed_since(T) == 2
    # the first to end after a time, on the master's clock (`ladder.window_cap`)
    assert live.first_end_since(T) == pytest.approx(T + 2.0)
    assert live.first_end_since(T + 3.5) is None


def test_a_missing_worker_holds_neither_rungs_nor_the_drain(master) -> None:
    live = live_with_window(master, T + 10)
    for node in ("w-ahead", "w-true"):
        live.set_offset(node, 0.0)
    live.update("w-ahead", state(T + 12, T + 12, in_flight=0))
    live.update("w-true", state(T + 7, T + 6))  # its last word before the machine died
    assert live.poll() == [] and not live.drained(0)
    master.runner.clients["w-true"].state = STATE_MISSING
    assert len(live.poll()) == 1 and live.drained(0)


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_answers_join_the_round_in_progress(master) -> None:
    watch = WorkerWatch(master)
    watch.tick(T)
    w = watch.workers["w-ahead"]
    assert w.next_round == T + 1  # a second after it connected: it may not listen yet
    pong = SimpleNamespace(node_id="w-ahead", data={"t1": T, "t2": T + 3.1, "t3": T + 3.1,
                                                    "client_id": "host-41"})
    watch.on_pong(master, pong)  # no round in progress: too late for its round
    assert w.client_id == ""
    w.exchanges = []
    watch.on_pong(master, pong)
    assert w.client_id == "host-41" and [e.t2 for e in w.exchanges] == [T + 3.1]


def test_rounds_go_to_the_clock_file_and_the_live_rungs(master, tmp_path: Path) -> None:
    watch = WorkerWatch(master)
    watch.tick(T)
    w = watch.workers["w-ahead"]
    w.client_id = "host-41"
    # a slow exchange (a late worker loop) and a clean one: 0.2 ms there, 0.3 ms back
    slow = Exchange(T + 1.0, T + 4.004, T + 4.004, T + 1.0043)
    clean = Exchange(T + 1.02, T + 4.0202, T + 4.0202, T + 1.0205)
    watch.finish_round(w, [slow, clean])
    (rec,) = read(tmp_path / "run_clock.csv")
    assert tuple(rec) == CLOCK_COLUMNS and (rec["client_id"], rec["node"]) == (
        "host-41", "w-ahead")
    assert float(rec["offset_s"]) == pytest.approx(3.0 - 0.00005, abs=2e-6)
    assert float(rec["rtt_s"]) == pytest.approx(0.0005, abs=2e-6)
    assert rec["exchanges"] == "2"
    assert watch.live.offsets["w-ahead"] == pytest.approx(3.0, abs=1e-4)
    assert not (tmp_path / "run_events.csv").exists()
    # ten seconds later the offset is 40 ms more: the clock was stepped
    watch.finish_round(w, [Exchange(T + 11, T + 14.0402, T + 14.0402, T + 11.0004)])
    (event,) = read(tmp_path / "run_events.csv")
    assert tuple(event) == EVENTS_COLUMNS and event["event"] == "clock_jump"
    assert float(event["since"]) == pytest.approx(T + 1.02, abs=0.01)


def test_a_busy_moment_is_measured_again_and_only_a_busy_spell_is_told(
        master, tmp_path: Path) -> None:
    watch = WorkerWatch(master)
    watch.tick(T)
    w = watch.workers["w-ahead"]
    watch.finish_round(w, [Exchange(T + 1, T + 4.0002, T + 4.0002, T + 1.0004)])
    w.next_round = T + 11
    for i in range(3):  # every exchange 40 ms late: uncertain by 20 ms
        t1 = T + 2 + i
        watch.finish_round(w, [Exchange(t1, t1 + 3.04, t1 + 3.04, t1 + 0.04)])
        assert w.next_round == pytest.approx(t1 + 0.02 + 1.0)  # again in a second
        assert watch.live.offsets["w-ahead"] == pytest.approx(3.0)  # the sure one holds
    assert len(read(tmp_path / "run_clock.csv")) == 4
    (event,) = read(tmp_path / "run_events.csv")
    assert event["event"] == "clock_uncertain" and "3 rounds in a row" in event["detail"]
    assert float(event["since"]) == pytest.approx(T + 2.02)


def test_a_worker_that_never_answers_is_taken_as_it_is(master, tmp_path: Path) -> None:
    watch = WorkerWatch(master)
    watch.tick(T)
    w = watch.workers["w-true"]
    for _ in range(3):
        watch.finish_round(w, [])
    assert watch.live.offsets["w-true"] == 0.0 and w.next_round == float("inf")
    (event,) = read(tmp_path / "run_events.csv")
    assert event["event"] == "clock_unmeasured"


def test_lost_and_back_workers_are_events(master, tmp_path: Path) -> None:
    watch = WorkerWatch(master)
    watch.tick(T)
    watch.on_heartbeat(client_id="w-true")
    watch.workers["w-true"].last_heard = T + 0.5
    master.runner.clients["w-true"].state = STATE_MISSING
    watch.tick(T + 0.6)  # before any round is due
    watch.tick(T + 0.7)
    master.runner.clients["w-true"].state = STATE_RUNNING
    watch.tick(T + 0.8)
    lost, back = read(tmp_path / "run_events.csv")
    assert (lost["event"], lost["client_id"]) == ("lost", "w-true")  # no answer yet: node
    assert float(lost["since"]) == pytest.approx(T + 0.5)
    assert "restart on the remaining workers" in lost["detail"]
    assert back["event"] == "back"


def test_a_worker_answers_with_its_two_stamps() -> None:
    sent = []
    env = SimpleNamespace(runner=SimpleNamespace(
        send_message=lambda kind, data: sent.append((kind, data))))
    answer_ping(env, SimpleNamespace(data={"t1": T}))  # type: ignore[arg-type]
    ((kind, data),) = sent
    assert kind == MSG_PONG and data["t1"] == T and data["t2"] <= data["t3"]
    assert data["client_id"].endswith(f"-{os.getpid()}")
