"""A reply's fingerprint: identical texts match, and two texts part where they first differ."""

from __future__ import annotations

import pytest

from specload.runfiles.reply_digest import BLOCK_CHARS, fingerprint, first_difference

TEXT = " the model server batch cache draft verify step queue" * 6


def test_the_same_text_has_the_same_fingerprint_and_no_difference() -> None:
    a, b = fingerprint(TEXT), fingerprint(str(TEXT))
    assert a == b and a.chars == len(TEXT) and len(a.digest) == 16
    assert len(a.blocks.split()) == -(-len(TEXT) // BLOCK_CHARS)
    assert first_difference(a.blocks, b.blocks) is None


@pytest.mark.parametrize("at", [0, 5, BLOCK_CHARS, 100, len(TEXT) - 1])
def test_one_changed_character_is_found_in_its_block(at: int) -> None:
    changed = TEXT[:at] + ("X" if TEXT[at] != "X" else "Y") + TEXT[at + 1:]
    a, b = fingerprint(TEXT), fingerprint(changed)
    assert a.digest != b.digest
    found = first_difference(a.blocks, b.blocks)
    assert found is not None and found <= at < found + BLOCK_CHARS


def test_a_reply_cut_short_differs_where_it_ends() -> None:
    cut = TEXT[:5 * BLOCK_CHARS]
    assert first_difference(fingerprint(TEXT).blocks, fingerprint(cut).blocks) == len(cut)


def test_an_empty_reply_has_no_digest() -> None:
    assert fingerprint("") == (0, "", "")
