"""The trace-replay plan: each speed replays the whole window (after a warmup that
replays its opening), at the trace's times divided by the speed; load processes share
it round-robin, and it travels to workers whole. Prompts follow the trace's lengths and
share text exactly where its hash ids do, and only within one pass."""

from __future__ import annotations

import pytest

from specload.traffic.arrivals import RateError, share
from specload.traffic.trace_plan import Replay, TracePlan, plan_speeds
from specload.traffic.trace_prompts import TracePrompts
from specload.traffic.traces import Trace, TraceRequest

REQUESTS = (TraceRequest(0.0, 100, 5, (1, 2)), TraceRequest(1.0, 60, 3, (1, 7)),
            TraceRequest(2.5, 40, 8), TraceRequest(3.0, 80, 2, (1, 2)))
TRACE = Trace("t.jsonl", "mooncake", REQUESTS, 4.0)


def test_every_speed_replays_the_whole_window_after_a_warmup() -> None:
    plan = plan_speeds(TRACE, [1, 2], warmup_s=1.5)
    assert plan.speeds == (1, 2)
    assert [(r.rate, r.warmup_s, r.measure_s) for r in plan.rungs] == [(1, 1.5, 4.0),
                                                                       (2, 1.5, 2.0)]
    got = plan.arrivals()
    # speed 1: warmup replays what falls in its first 1.5 s (0 and 1 s); then the window
    # speed 2 (from 1.5 + 4 = 5.5 s): warmup 0, 0.5, 1.25 s; then the window at 7 s
    assert [t for t, _ in got] == [0.0, 1.0, 1.5, 2.5, 4.0, 4.5,
                                   5.5, 6.0, 6.75, 7.0, 7.5, 8.25, 8.5]
    assert [r for _, r in got][:4] == [Replay(0, "1 warmup"), Replay(1, "1 warmup"),
                                       Replay(0, "1"), Replay(1, "1")]
    assert {r.replay for _, r in got[6:9]} == {"2 warmup"}
    # the planned rate of a measure window is the window's requests over its length
    windows = plan.windows(100.0)
    assert [(w.rate, w.speed) for w in windows] == [(1.0, 1), (2.0, 2)]
    assert [(w.warmup_start, w.measure_start, w.measure_end) for w in windows] == \
        [(100.0, 101.5, 105.5), (105.5, 107.0, 109.0)]


def test_processes_share_the_schedule_and_workers_get_the_plan_whole() -> None:
    plan = plan_speeds(TRACE, [1, 3], warmup_s=0)
    both = share(plan.arrivals(), 0, 2) + share(plan.arrivals(), 1, 2)
    assert sorted(both) == sorted(plan.arrivals())
    again = TracePlan.from_message(plan.as_message())
    assert again == plan and again.arrivals() == plan.arrivals()


def test_speeds_are_validated_together() -> None:
    with pytest.raises(RateError, match=r"speed 1: 0 must be more than 0"):
        plan_speeds(TRACE, [1, 0], 1)
    with pytest.raises(RateError, match=r"the speeds must increase, but 1 follows 2"):
        plan_speeds(TRACE, [2, 1], 1)
    with pytest.raises(RateError, match=r"no speeds: give at least one replay speed"):
        plan_speeds(TRACE, [], 1)


def test_prompts_share_text_where_the_blocks_do_and_only_within_a_pass() -> None:
    prompts = TracePrompts("lorem ipsum dolor sit amet " * 400, block_tokens=16, seed=3)
    first = prompts.build(REQUESTS[0], Replay(0, "1")).text
    same_prefix = prompts.build(REQUESTS[3], Replay(3, "1")).text
    other = prompts.build(REQUESTS[1], Replay(1, "1")).text
    block = 16 * 4  # characters: a block's text at the first guess of 4 per token
    assert first[:2 * block] == same_prefix[:2 * block]  # blocks 1, 2 in both
    assert first[:block] == other[:block] and first[block:2 * block] != other[block:2 * block]
    assert prompts.build(REQUESTS[0], Replay(0, "2")).text[:block] != first[:block]
    # the same arrival on another arm, or another load process: the same text
    assert TracePrompts("lorem ipsum dolor sit amet " * 400, 16, 3).build(
        REQUESTS[0], Replay(0, "1")).text == first


def test_prompt_lengths_follow_the_server_count_and_replies_the_trace() -> None:
    prompts = TracePrompts("the quick brown fox jumps over the lazy dog " * 300, 16, 0)
    built = prompts.build(REQUESTS[2], Replay(2, "1"))  # no blocks: text of its own
    assert built.max_tokens == 8 and built.index == 2 and built.category == "trace"
    assert built.chars == len(built.text) == 40 * 4  # the first guess: 4 characters a token
    # a server that counts 5 characters a token and 7 tokens of template
    short, long = prompts.probes()
    assert len(long) > 4 * len(short) and not prompts.fitted
    prompts.fit((7 + len(short) // 5, 7 + len(long) // 5))
    built = prompts.build(REQUESTS[2], Replay(2, "1"))
    assert prompts.fitted and abs(built.chars / 5 + 7 - 40) <= 1
    # the same counts, the same prompts: another arm of the same model sends these
    again = TracePrompts("the quick brown fox jumps over the lazy dog " * 300, 16, 0)
    again.fit((7 + len(short) // 5, 7 + len(long) // 5))
    assert again.build(REQUESTS[2], Replay(2, "1")) == built
