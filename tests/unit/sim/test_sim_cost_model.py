"""The roofline step-time model: regimes, monotonicity and each added term."""

from __future__ import annotations

import dataclasses

import pytest

from specload.sim.cost_model import CostModel, StepShape
from specload.sim.profile import Profile, load_profile


def decode_shape(batch: int, k: int, ctx: int = 512) -> StepShape:
    tokens = batch * (1 + k)
    return StepShape(tokens=tokens, kv_read_tokens=batch * ctx, attn_token_ctx=tokens * ctx,
                     num_seqs=batch, num_decode=batch, num_spec_seqs=batch if k else 0, k=k,
                     drafts=batch * k)


@pytest.fixture(scope="module")
def llama() -> CostModel:
    return CostModel(load_profile("h100-llama8b-eagle3"))


def test_empty_step_costs_nothing(llama: CostModel) -> None:
    assert llama.cost(StepShape()).total == 0.0


def test_small_batch_is_memory_bound_and_large_prefill_compute_bound(llama: CostModel) -> None:
    small = llama.cost(decode_shape(1, 0))
    assert small.memory > small.compute
    prefill = llama.cost(StepShape(tokens=8192, kv_read_tokens=8192, attn_token_ctx=8192 * 4096,
                                   num_seqs=1))
    assert prefill.compute > prefill.memory


def test_memory_term_matches_weights_over_bandwidth(llama: CostModel) -> None:
    p = load_profile("h100-llama8b-eagle3")
    hw = p.hardware
    expected = (p.model.dense_weight_gb * 1e9 + p.model.kv_bytes_per_token * 100) / (
        hw.mem_bandwidth_gbs * 1e9 * hw.eta_mem)
    got = llama.cost(StepShape(tokens=1, kv_read_tokens=100, num_seqs=1)).memory
    assert got == pytest.approx(expected)


def test_verifying_k_tokens_costs_little_more_than_one_when_memory_bound(
        llama: CostModel) -> None:
    one = llama.cost(decode_shape(2, 0))
    spec = llama.cost(decode_shape(2, 3))
    assert spec.memory == pytest.approx(one.memory, rel=0.01)
    assert spec.total > one.total  # drafting and host time are not free
    assert spec.draft > 0 and one.draft == 0


def _hybrid(attention_apart: bool) -> CostModel:
    p = load_profile("h100nvl-gemma4-31b-mtp")
    hw = p.hardware.model_copy(update={"attention_apart": attention_apart})
    return CostModel(p.model_copy(update={"hardware": hw}))


def test_a_sliding_windows_kv_is_read_only_for_its_window() -> None:
    gemma = _hybrid(True)
    m = load_profile("h100nvl-gemma4-31b-mtp").model
    short, long = (gemma.cost(StepShape(tokens=1, kv_read_tokens=ctx, num_seqs=1,
                                        kv_window_tokens=min(ctx, m.sliding_window)))
                   for ctx in (4000, 8000))
    per_token = m.kv_bytes_per_token  # past the window, only the global layers' KV grows
    assert long.memory - short.memory == pytest.approx(
        4000 * per_token / (3900e9 * load_profile("h100nvl-gemma4-31b-mtp").hardware.eta_mem))


def test_attention_apart_adds_its_roofline_to_a_compute_bound_steps() -> None:
    shape = decode_shape(256, 3, ctx=4000)
    together, apart = _hybrid(False).cost(shape), _hybrid(True).cost(shape)
    p = load_profile("h100nvl-gemma4-31b-mtp")
    kv_s = 256 * 4000 * p.model.kv_bytes_per_token / (3900e9 * p.hardware.eta_mem)
    assert together.compute > together.memory  # verifying 1024 tokens: compute-bound
    # one roofline hides the KV reads under the verify step's matmuls; kernels apart pay
    # them after the matmuls (less only the attention FLOPs the one roofline counted)
    assert apart.total - together.total == pytest.approx(kv_s, rel=0.25)


def test_step_time_grows_with_batch_and_k(llama: CostModel) -> None:
    for k in (0, 2):
        times = [llama.cost(decode_shape(b, k)).total for b in (1, 2, 8, 32, 128, 256)]
        assert times == sorted(times)
    assert [llama.cost(decode_shape(64, k)).total for k in range(4)] == sorted(
        llama.cost(decode_shape(64, k)).total for k in range(4))


def test_moe_weights_read_grow_with_tokens_up_to_all_experts() -> None:
    model = CostModel(load_profile("seed-glm"))
    p = load_profile("seed-glm").model
    dense, full = p.dense_weight_gb * 1e9, (p.dense_weight_gb + p.expert_weight_gb) * 1e9
    reads = [model.weight_bytes(t) for t in (1, 2, 4, 16, 256, 4096)]
    assert reads == sorted(reads)
    assert dense < reads[0] < full
    assert reads[-1] == pytest.approx(full, rel=1e-6)


def test_interconnect_adds_time_per_token() -> None:
    model = CostModel(load_profile("seed-glm"))
    a = model.cost(StepShape(tokens=10, num_seqs=1))
    b = model.cost(StepShape(tokens=20, num_seqs=1))
    fixed = model.cost(StepShape(tokens=0, num_seqs=1)).comm
    assert b.comm - fixed == pytest.approx(2 * (a.comm - fixed)) and a.comm > fixed > 0


def test_waiting_requests_add_host_time() -> None:
    model = CostModel(_variant("seed-glm", overheads={"per_waiting_s": 0.0001}))
    idle_queue = model.cost(decode_shape(4, 0))
    long_queue = model.cost(dataclasses.replace(decode_shape(4, 0), num_waiting=100))
    assert long_queue.host == pytest.approx(idle_queue.host + 0.01)
    assert long_queue.memory == idle_queue.memory


def test_waiting_requests_lengthen_the_step_by_a_share_of_itself() -> None:
    plain = CostModel(load_profile("cpu2-gemma3-270m-ngram"))
    slowed = CostModel(_variant("cpu2-gemma3-270m-ngram", unexplained={"waiting_share": 0.02}))
    shape = dataclasses.replace(decode_shape(8, 0), num_waiting=8)
    assert slowed.cost(shape).total == pytest.approx(plain.cost(shape).total * 1.16)
    assert slowed.cost(decode_shape(8, 0)).total == pytest.approx(
        plain.cost(decode_shape(8, 0)).total)


def _variant(name: str, **sections: dict[str, object]) -> Profile:
    """A built-in profile with some parameters replaced, section by section."""
    data = load_profile(name).model_dump()
    for section, values in sections.items():
        data[section].update(values)
    return Profile.model_validate(data)


def test_overlap_hides_host_time_under_the_gpu_and_fixed_k_speculation_can_lose_it() -> None:
    p = _variant("h100-llama8b-eagle3", overheads={"overlap": True},
                 speculative={"disables_overlap": True})
    shape = decode_shape(8, 0)
    hidden = CostModel(p, "off").cost(shape)
    gpu = max(hidden.memory, hidden.compute) + hidden.comm
    assert hidden.total == pytest.approx(max(gpu, hidden.host))
    spec = decode_shape(8, 2)
    on = CostModel(p, "on").cost(spec)
    assert on.total == pytest.approx(max(on.memory, on.compute) + on.comm + on.draft + on.host)
    kept = _variant("h100-llama8b-eagle3", overheads={"overlap": True},
                    speculative={"disables_overlap": False})
    assert CostModel(kept, "on").cost(spec).total < on.total


def test_a_k0_step_with_the_drafter_loaded_pays_the_sync_forward() -> None:
    p = load_profile("h100-llama8b-eagle")
    shape = decode_shape(32, 0)
    off, scheduled = CostModel(p, "off").cost(shape), CostModel(p, "schedule").cost(shape)
    assert scheduled.total == pytest.approx(off.total * (1 + p.speculative.k0_overhead))
    assert p.speculative.k0_overhead == pytest.approx(0.075)  # vLLM PR #53426: +4-11%
    prefill_only = StepShape(tokens=512, kv_read_tokens=512, attn_token_ctx=512 * 256,
                             num_seqs=1)
    assert CostModel(p, "schedule").cost(prefill_only).sync == 0.0


def test_allreduce_latency_is_paid_once_per_forward() -> None:
    p = _variant("seed-glm", hardware={"allreduce_latency_s": 0.0001},
                 model={"allreduces_per_forward": 10})
    per_token = p.model.allreduce_bytes_per_token / (p.hardware.interconnect_gbs * 1e9)
    for tokens in (1, 100):
        comm = CostModel(p).cost(StepShape(tokens=tokens, num_seqs=1)).comm
        assert comm == pytest.approx(10 * 0.0001 + tokens * per_token)


def test_draft_extend_forwards_add_to_the_k_drafting_ones() -> None:
    p = _variant("h100-llama8b-eagle3", speculative={"extra_draft_forwards": 1})
    k = p.speculative.k
    plain = CostModel(_variant("h100-llama8b-eagle3", speculative={"extra_draft_forwards": 0}),
                      "on").cost(decode_shape(4, k))
    assert CostModel(p, "on").cost(decode_shape(4, k)).draft == pytest.approx(
        plain.draft * (k + 1) / k)


def test_unexplained_time_adds_to_the_step_and_is_never_hidden() -> None:
    p = _variant("h100-llama8b-eagle3", overheads={"overlap": True},
                 unexplained={"step_s": 0.001, "per_seq_s": 0.0001, "per_spec_seq_s": 0.0002,
                              "per_waiting_s": 0.00001})
    shape = dataclasses.replace(decode_shape(4, 2), num_waiting=10)
    plain = _variant("h100-llama8b-eagle3", overheads={"overlap": True})
    extra = CostModel(p, "on").cost(shape).total - CostModel(plain, "on").cost(shape).total
    assert extra == pytest.approx(0.001 + 4 * 0.0001 + 4 * 0.0002 + 10 * 0.00001)


def test_the_output_head_multiplies_only_the_tokens_whose_logits_are_computed() -> None:
    """A prompt's tokens pass through the body; only its last reaches the output head (a
    large share of a small model with a big vocabulary, as Gemma 3 270M's)."""
    cpu = CostModel(load_profile("cpu2-gemma3-270m-ngram"))
    m = load_profile("cpu2-gemma3-270m-ngram").model
    prompt = cpu.cost(StepShape(tokens=32, num_seqs=1, logit_tokens=1))
    decode = cpu.cost(StepShape(tokens=32, num_seqs=32, num_decode=32, logit_tokens=32))
    body = m.active_params_b - m.head_params_b
    assert prompt.compute / decode.compute == pytest.approx(
        (32 * body + m.head_params_b) / (32 * m.active_params_b))
    llama = CostModel(load_profile("h100-llama8b-eagle3"))  # no head given: every token
    assert (llama.cost(StepShape(tokens=64, num_seqs=1, logit_tokens=1)).compute
            == llama.cost(StepShape(tokens=64, num_seqs=1, logit_tokens=64)).compute)


def test_the_flop_rate_ramps_up_with_the_steps_tokens() -> None:
    p = load_profile("cpu2-gemma3-270m-ngram")
    ramp = p.hardware.compute_ramp_tokens
    flat = CostModel(p.model_copy(update={"hardware": p.hardware.model_copy(
        update={"compute_ramp_tokens": 0.0})}))
    ramped = CostModel(p)
    for tokens in (1, 5, 40):
        shape = StepShape(tokens=tokens, num_seqs=1, num_decode=1, logit_tokens=tokens)
        assert ramped.cost(shape).compute == pytest.approx(
            flat.cost(shape).compute * (tokens + ramp) / tokens)


def test_tiled_kernels_pay_a_pass_over_the_weights_per_tile_and_per_token_left_over() -> None:
    """llama.cpp's CPU kernels take 4 tokens at once and each left over alone: a plain
    step of 2 tokens costs two of 1 while memory-bound, one of 3 tokens more than one of
    4 (seen on a real llama-server: 17.5, 32, 55 and 48 ms)."""
    p = load_profile("cpu2-gemma3-270m-ngram")
    assert p.hardware.compute_tile_tokens == 4
    model = CostModel(p)
    flat = CostModel(p.model_copy(update={"hardware": p.hardware.model_copy(
        update={"compute_tile_tokens": 0})}))
    assert [model.weight_passes(n) for n in (1, 2, 3, 4, 5, 8, 9)] == [1, 2, 3, 1, 2, 2, 3]
    assert flat.weight_passes(9) == 1

    def memory(m: CostModel, n: int) -> float:
        return m.cost(StepShape(tokens=n, num_seqs=n, num_decode=n, logit_tokens=n)).memory

    assert memory(model, 2) == pytest.approx(2 * memory(model, 1), rel=1e-3)
    assert memory(model, 3) > memory(model, 4) == pytest.approx(memory(flat, 4))
