"""Fitting a prompt set to a context: what is counted, left out, shortened and sent."""

from __future__ import annotations

import pytest

from specload.traffic import prompt_fit
from specload.traffic.prompts import Prompt

TEMPLATE = 5  # tokens the counter below adds per message


def prompt(chars: int, category: str = "chat", max_tokens: int | None = None) -> Prompt:
    return Prompt(({"role": "system", "content": "be brief"},
                   {"role": "user", "content": "x" * chars}), category, max_tokens)


class Counter:
    """A tokenizer of three characters a token, with its calls kept."""

    def __init__(self) -> None:
        self.seen: list[Prompt] = []

    def __call__(self, p: Prompt) -> int:
        self.seen.append(p)
        return sum(TEMPLATE + -(-len(m["content"]) // 3) for m in p.messages)


def test_only_prompts_that_may_not_fit_by_their_bytes_are_counted() -> None:
    prompts = [prompt(30), prompt(300), prompt(3000)]
    count = Counter()
    fit = prompt_fit.plan(prompts, [100] * 3, 400, count, TEMPLATE)
    # room 300: 38 bytes + 2 x 6 template tokens fit, never counted; 308 bytes + 12 may
    # not fit by their bytes, but their 113 tokens do; 3008 bytes are 1013 tokens: over
    assert [len(p.messages[-1]["content"]) for p in count.seen] == [300, 3000]
    assert (fit.over, fit.skip, fit.cut, fit.counted, fit.longest) == ((2,), (2,), {}, 2, 1013)


def test_each_prompt_is_judged_with_its_own_output_budget() -> None:
    prompts = [prompt(300), prompt(300)]  # 113 tokens each
    fit = prompt_fit.plan(prompts, [87, 88], 200, Counter(), TEMPLATE)
    assert fit.over == (1,)


def test_trim_cuts_the_last_message_until_the_server_counts_it_within_the_room() -> None:
    prompts = [prompt(3000), prompt(30)]
    count = Counter()
    fit = prompt_fit.plan(prompts, [64, 64], 300, count, TEMPLATE, policy="trim")
    assert fit.over == (0,) and fit.skip == () and set(fit.cut) == {0}
    fitted = prompt_fit.apply(prompts, fit.skip, fit.cut)
    room = 300 - 64
    assert count(fitted[0]) <= room
    assert count(fitted[0]) >= room - room // 100  # as much as fits, within 1%
    assert fitted[0].messages[0] == prompts[0].messages[0]  # only the last message is cut
    assert fitted[1] is prompts[1]


def test_trim_leaves_out_what_would_keep_too_little() -> None:
    # the system message and the templates alone take 13 of the 20 tokens of room
    fit = prompt_fit.plan([prompt(3000)], [80], 100, Counter(), TEMPLATE, policy="trim")
    assert fit.skip == (0,) and fit.cut == {}


def test_send_keeps_every_prompt_but_says_which_are_over() -> None:
    fit = prompt_fit.plan([prompt(3000), prompt(30)], [64, 64], 300, Counter(), TEMPLATE,
                          policy="send")
    assert (fit.over, fit.skip, fit.cut) == ((0,), (), {})


def test_apply_and_the_option_texts_give_every_process_the_same_set() -> None:
    prompts = [prompt(n) for n in (10, 20, 30, 40)]
    fit = prompt_fit.Fit(100, over=(1, 3), skip=(1,), cut={3: 7})
    skip = prompt_fit.parse_skip(prompt_fit.skip_text(fit))
    cut = prompt_fit.parse_cut(prompt_fit.cut_text(fit))
    assert (skip, cut) == ([1], {3: 7})
    fitted = prompt_fit.apply(prompts, skip, cut)
    assert [len(p.messages[-1]["content"]) for p in fitted] == [10, 30, 7]
    assert prompt_fit.apply(prompts, [], {}) == prompts


@pytest.mark.parametrize(("parse", "text"), [(prompt_fit.parse_skip, "1,x"),
                                             (prompt_fit.parse_cut, "3=7"),
                                             (prompt_fit.parse_cut, "3:7:1")])
def test_bad_option_texts_are_named(parse, text: str) -> None:
    with pytest.raises(ValueError, match=text):
        parse(text)


def test_a_set_left_out_whole_is_an_error_not_an_empty_run() -> None:
    with pytest.raises(ValueError, match="none fits"):
        prompt_fit.apply([prompt(10)], [0], {})


def test_an_unknown_policy_is_named() -> None:
    with pytest.raises(ValueError, match="cut"):
        prompt_fit.plan([prompt(10)], [1], 100, Counter(), TEMPLATE, policy="cut")
