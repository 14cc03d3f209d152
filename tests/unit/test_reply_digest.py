"""A reply's fingerprint: identical texts match, and two texts part where they first differ."""

from __future__ import annotations

import random

import pytest

from specload.runfiles.reply_digest import BLOCK_BYTES, fingerprint, first_difference

TEXT = " the model server batch cache draft verify step queue" * 6


def test_the_same_text_has_the_same_fingerprint_and_no_difference() -> None:
    a, b = fingerprint(TEXT), fingerprint(str(TEXT))
    assert a == b and a.size == len(TEXT) and len(a.digest) == 16
    assert len(a.blocks.split()) == -(-len(TEXT) // BLOCK_BYTES)
    assert first_difference(a.blocks, b.blocks) is None


@pytest.mark.parametrize("at", [0, 5, BLOCK_BYTES, 100, len(TEXT) - 1])
def test_one_changed_character_is_found_in_its_block(at: int) -> None:
    changed = TEXT[:at] + ("X" if TEXT[at] != "X" else "Y") + TEXT[at + 1:]
    a, b = fingerprint(TEXT), fingerprint(changed)
    assert a.digest != b.digest
    found = first_difference(a.blocks, b.blocks)
    assert found is not None and found <= at < found + BLOCK_BYTES


def test_a_reply_cut_short_differs_where_it_ends() -> None:
    cut = TEXT[:5 * BLOCK_BYTES]
    assert first_difference(fingerprint(TEXT).blocks, fingerprint(cut).blocks) == len(cut)


def test_an_empty_reply_has_no_digest() -> None:
    assert fingerprint("") == (0, "", "")


def test_the_first_difference_is_the_first_block_that_differs() -> None:
    """Found by halving the cells' common prefix; the same as comparing block by block."""
    rng = random.Random(7)
    for _ in range(500):
        a = [f"{rng.randrange(4):04x}" for _ in range(rng.randrange(1, 30))]
        b = [x if rng.random() < 0.9 else f"{rng.randrange(4):04x}" for x in a]
        b = b[:rng.randrange(1, len(b) + 1)] + [f"{rng.randrange(4):04x}"
                                                 for _ in range(rng.randrange(3))]
        naive = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                     None if len(a) == len(b) else min(len(a), len(b)))
        got = first_difference(" ".join(a), " ".join(b))
        assert got == (None if naive is None else naive * BLOCK_BYTES), (a, b)
