"""The pure batch former: limits, chunked prefill, preemption with recompute."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from specload.sim.scheduler import BatchFormer, Seq


def k_const(k: int):
    return lambda _batch: k


def run_to_completion(former: BatchFormer, k: int, accept_all: bool = True,
                      max_steps: int = 100_000) -> tuple[int, dict[int, int]]:
    """Step until idle; returns (steps, tokens emitted per seq key)."""
    emitted: dict[int, int] = {}
    steps = 0
    while former.has_work():
        batch = former.schedule(k_const(k))
        assert batch, "work left but nothing schedulable"
        assert former.kv_used <= former.kv_capacity
        accepted = [s.sched_k if accept_all else 0 for s in batch.decode]
        for seq, n in former.commit(batch, accepted):
            emitted[seq.key] = emitted.get(seq.key, 0) + n
        steps += 1
        assert steps < max_steps
    return steps, emitted


def test_running_set_bounded_by_max_num_seqs() -> None:
    former = BatchFormer(max_num_seqs=3, max_num_batched_tokens=10_000, kv_capacity=100_000)
    for i in range(5):
        former.add(Seq(key=i, prompt_tokens=10, target_tokens=5))
    batch = former.schedule(k_const(0))
    assert len(batch.prefill) == 3 and len(former.waiting) == 2
    assert batch.shape.num_waiting == 2


def test_long_prompt_is_prefilled_in_budget_sized_chunks() -> None:
    former = BatchFormer(max_num_seqs=4, max_num_batched_tokens=100, kv_capacity=10_000)
    seq = Seq(key=0, prompt_tokens=250, target_tokens=3)
    former.add(seq)
    chunks = []
    for _ in range(3):
        batch = former.schedule(k_const(0))
        chunks.append(batch.shape.tokens)
        out = former.commit(batch, [0] * len(batch.decode))
    assert chunks == [100, 100, 50]
    assert out == [(seq, 1)]  # the first token comes with the last chunk
    assert seq.decoding


def test_decode_emits_one_plus_accepted_and_caps_at_target() -> None:
    former = BatchFormer(max_num_seqs=4, max_num_batched_tokens=1000, kv_capacity=10_000)
    seq = Seq(key=0, prompt_tokens=10, target_tokens=6)
    former.add(seq)
    former.commit(former.schedule(k_const(3)), [])  # prefill -> 1 token
    batch = former.schedule(k_const(3))
    assert batch.decode == [seq] and batch.shape.tokens == 4 and seq.sched_k == 3
    assert former.commit(batch, [2]) == [(seq, 3)]  # 2 accepted + bonus
    batch = former.schedule(k_const(3))
    assert former.commit(batch, [3]) == [(seq, 2)]  # only 2 left of 6
    assert seq.finished and not former.has_work() and former.kv_used == 0


def test_kv_exhaustion_preempts_newest_and_recomputes() -> None:
    # two requests of 50 prompt + 50 output need 200 slots; only 150 exist
    former = BatchFormer(max_num_seqs=8, max_num_batched_tokens=1000, kv_capacity=150)
    old, new = Seq(key="old", prompt_tokens=50, target_tokens=50), Seq(
        key="new", prompt_tokens=50, target_tokens=50)
    former.add(old)
    former.add(new)
    _steps, emitted = run_to_completion(former, k=0)
    assert emitted == {"old": 50, "new": 50}
    assert new.preemptions >= 1 and old.preemptions == 0
    assert former.kv_used == 0


def test_no_admission_in_a_step_with_preemption() -> None:
    former = BatchFormer(max_num_seqs=8, max_num_batched_tokens=1000, kv_capacity=104)
    a, b = Seq(key="a", prompt_tokens=50, target_tokens=40), Seq(
        key="b", prompt_tokens=50, target_tokens=40)
    former.add(a)
    former.add(b)
    former.commit(former.schedule(k_const(0)), [])  # both prefilled: 100 slots used
    former.add(Seq(key="c", prompt_tokens=1, target_tokens=1))
    saw_preemption = False
    for _ in range(10):
        batch = former.schedule(k_const(0))
        if batch.preempted:
            saw_preemption = True
            assert all(s.key != "c" for s in batch.prefill)
        former.commit(batch, [0] * len(batch.decode))
    assert saw_preemption


def test_abort_frees_kv_everywhere() -> None:
    former = BatchFormer(max_num_seqs=1, max_num_batched_tokens=1000, kv_capacity=10_000)
    running, waiting = Seq(key=1, prompt_tokens=30, target_tokens=9), Seq(
        key=2, prompt_tokens=30, target_tokens=9)
    former.add(running)
    former.add(waiting)
    former.commit(former.schedule(k_const(0)), [])
    assert former.kv_used == 30
    former.abort(running)
    former.abort(waiting)
    assert former.kv_used == 0 and not former.has_work()


@settings(max_examples=60, deadline=None)
@given(
    reqs=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 60)), min_size=1, max_size=12),
    k=st.integers(0, 4),
    budget=st.integers(8, 512),
    max_seqs=st.integers(1, 6),
    accept_all=st.booleans(),
)
def test_every_request_gets_exactly_its_tokens(reqs: list[tuple[int, int]], k: int,
                                               budget: int, max_seqs: int,
                                               accept_all: bool) -> None:
    capacity = max(p + o for p, o in reqs) + k + 1
    former = BatchFormer(max_num_seqs=max_seqs, max_num_batched_tokens=budget,
                         kv_capacity=capacity)
    for i, (prompt, out) in enumerate(reqs):
        former.add(Seq(key=i, prompt_tokens=prompt, target_tokens=out))
    _, emitted = run_to_completion(former, k, accept_all)
    assert emitted == {i: out for i, (_, out) in enumerate(reqs)}
    assert former.kv_used == 0
