"""The prefix cache and the batch former with it: hits, blocks, eviction, prefill charged."""

from __future__ import annotations

from specload.sim.core import EngineCore
from specload.sim.prefix_cache import PrefixCache, block_keys
from specload.sim.profile import load_profile
from specload.sim.scheduler import BatchFormer, Seq
from specload.sim.textgen import chat_prompt_tokens, chat_token_text, reply_token_text
from specload.sim.virtual import run_closed_loop

BLOCK = 4  # tokens per block in these tests: 16 characters of token text


def text(tokens: int, fill: str = "a") -> str:
    return fill * (tokens * 4)


def k0(_batch: int) -> int:
    return 0


def seq(key: object, token_text: str, target: int = 1) -> Seq:
    return Seq(key=key, prompt_tokens=len(token_text) // 4, target_tokens=target,
               blocks=block_keys(token_text, BLOCK))


def run(former: BatchFormer) -> list[int]:
    """Step until idle; the prefill tokens scheduled per step."""
    prefill = []
    while former.has_work():
        batch = former.schedule(k0)
        prefill.append(sum(s.sched_tokens for s in batch.prefill))
        assert former.kv_total <= former.kv_capacity
        former.commit(batch, [0] * len(batch.decode))
    return prefill


def test_keys_cover_full_blocks_only_and_chain_their_prefix() -> None:
    a = block_keys(text(10), BLOCK)
    assert len(a) == 2  # 10 tokens: two full blocks, the last 2 tokens uncached
    b = block_keys(text(4, "b") + text(4), BLOCK)
    assert b[1] != a[1]  # the same tokens after another prefix are another block


def test_repeated_prompt_hits_all_blocks_but_the_last_token() -> None:
    former = BatchFormer(8, 1000, 1000, PrefixCache(BLOCK))
    prompt = text(12)
    former.add(seq(0, prompt))
    assert run(former) == [12]
    again = seq(1, prompt)
    former.add(again)
    # 12 tokens = 3 full blocks, but the last token is recomputed: 2 blocks hit
    assert run(former) == [4]
    assert again.cached_tokens == 8
    assert (former.prefix_queries, former.prefix_hits) == (24, 8)


def test_hits_stop_at_the_first_differing_block() -> None:
    former = BatchFormer(8, 1000, 1000, PrefixCache(BLOCK))
    former.add(seq(0, text(8) + text(8, "x")))
    run(former)
    other = seq(1, text(8) + text(2, "y") + text(6, "x"))
    former.add(other)
    run(former)
    assert other.cached_tokens == 8  # two shared blocks; the third differs in 2 tokens


def test_cached_blocks_are_used_by_requests_running_at_the_same_time() -> None:
    former = BatchFormer(8, 1000, 1000, PrefixCache(BLOCK))
    first = seq(0, text(9), target=50)
    former.add(first)
    former.commit(former.schedule(k0), [])  # prefilled, now decoding
    second = seq(1, text(9), target=50)
    former.add(second)
    batch = former.schedule(k0)
    assert second.cached_tokens == 8 and second.sched_tokens == 1
    assert former.cache is not None and former.cache.used_tokens == 8  # one copy, shared
    assert batch.shape.tokens == 1 + 1


def test_unused_blocks_are_evicted_under_capacity_least_recently_freed_first() -> None:
    cache = PrefixCache(BLOCK)
    former = BatchFormer(8, 1000, 24, cache)
    former.add(seq(0, text(8, "a")))
    run(former)
    former.add(seq(1, text(8, "b")))
    run(former)
    assert cache.tokens == 16 and cache.used_tokens == 0
    newcomer = seq(2, text(12, "c"))
    former.add(newcomer)
    run(former)  # 16 cached + 12 > 24: one block goes, the tail of "a" (freed first)
    a, b = block_keys(text(8, "a"), BLOCK), block_keys(text(8, "b"), BLOCK)
    assert a[1] not in cache and a[0] in cache and all(k in cache for k in b)


def test_blocks_in_use_are_never_evicted_a_request_is_preempted_instead() -> None:
    cache = PrefixCache(BLOCK)
    former = BatchFormer(8, 1000, 20, cache)
    holder = seq(0, text(8, "a"), target=100)
    former.add(holder)
    former.commit(former.schedule(k0), [])
    grower = seq(1, text(4, "b"), target=100)
    former.add(grower)
    preempted = []
    for _ in range(10):
        batch = former.schedule(k0)
        preempted += batch.preempted
        former.commit(batch, [0] * len(batch.decode))
    assert grower in preempted  # the newest request went; the holder's blocks stayed
    assert all(k in cache for k in holder.blocks)
    assert former.kv_total <= former.kv_capacity


def test_without_a_cache_the_prompt_is_prefilled_again() -> None:
    former = BatchFormer(8, 1000, 1000)
    former.add(seq(0, text(12)))
    former.add(seq(1, text(12)))
    assert run(former) == [24]
    assert former.prefix_queries == 24 and former.prefix_hits == 0


def test_engine_core_prices_only_uncached_prefill() -> None:
    profile = load_profile("h100-llama8b-eagle3")
    history = [("user", "hello " * 400), ("assistant", "sure " * 300)]
    prompt = chat_token_text([*history, ("user", "and then? " * 10)])

    def first_turn_then(core: EngineCore) -> float:
        for key, token_text in enumerate((chat_token_text(history), prompt)):
            core.add(Seq(key=key, prompt_tokens=len(token_text) // 4, target_tokens=1,
                         blocks=core.block_keys(token_text)))
            while core.has_work():
                result = core.step()
                assert result is not None
        return result.cost.total

    cached = EngineCore(profile, "off", None, 0)
    uncached = EngineCore(profile, "off", None, 0, prefix_caching=False)
    t_cached, t_uncached = first_turn_then(cached), first_turn_then(uncached)
    assert len(prompt) // 4 == chat_prompt_tokens([t for _, t in history] + ["and then? " * 10])
    c = cached.former
    assert c.prefix_hits > 0 and uncached.former.prefix_hits == 0
    assert t_cached < t_uncached


def test_a_finished_reply_is_cached_as_the_next_turn_sends_it() -> None:
    former = BatchFormer(8, 1000, 1000, PrefixCache(BLOCK))
    first = [("user", "x" * 40)]
    reply = "y" * 64
    history = chat_token_text(first) + reply_token_text(reply)
    turn1 = Seq(key=0, prompt_tokens=len(chat_token_text(first)) // 4, target_tokens=3,
                blocks=block_keys(history, BLOCK))
    former.add(turn1)
    run(former)
    second = chat_token_text([*first, ("assistant", reply), ("user", "z" * 40)])
    assert second.startswith(history)
    turn2 = seq(1, second)
    former.add(turn2)
    run(former)
    assert turn2.cached_tokens == len(history) // 4 // BLOCK * BLOCK


def test_the_throughput_probes_requests_share_no_block() -> None:
    """`sim.probe` measures what `sim-curve` models, which has no cache hits."""
    from specload.sim.bench_client import prompt_of

    first, second = prompt_of(512, 0), prompt_of(512, 1)
    assert len(first) == len(second) == len(prompt_of(512))
    assert not set(block_keys(first, BLOCK)) & set(block_keys(second, BLOCK))


def test_a_prompt_without_block_keys_keeps_its_kv_counted() -> None:
    """sim-curve's requests carry no block keys: their prompts' KV must stay in the pool
    (it once left the count as if published to the cache, so long prompts overran it)."""
    profile = load_profile("h100-llama8b-eagle3")
    point = run_closed_loop(profile, "off", None, 128, prompt_tokens=8192, output_tokens=64)
    fits = profile.kv_capacity(drafter=False) / (8192 + 64)
    assert point.mean_batch <= fits + 1
