"""The reference pages generated from the declarations are what the code declares now:
the command line, the per-rung columns and the engines (settings.md: test_settings.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specload.cli import reference as cli_reference
from specload.engines.listing import reference as engines_reference
from specload.report.rung_columns import reference as columns_reference

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(("page", "generate"), [
    ("cli.md", cli_reference), ("columns.md", columns_reference),
    ("engines.md", engines_reference)])
def test_the_page_is_the_declaration(page: str, generate: Callable[[], str]) -> None:
    assert (DOCS / page).read_text().endswith("\n\n" + generate() + "\n"), (
        f"regenerate docs/{page}: its header, then the text of the command it names")


def test_the_cli_page_names_every_subcommand_and_option() -> None:
    text = cli_reference()
    for sub in ("sweep", "worker", "report", "compare", "sim", "sim-curve", "sim-fit",
                "engines"):
        assert f"## specload {sub}\n" in text
    assert "| `--num-speculative-tokens`, `-k` |" in text  # a setting, from its declaration
