"""Every relative link and picture in the README and docs/ points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    targets = [t.split("#")[0] for t in LINK.findall(page.read_text())
               if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    missing = [t for t in targets if t and not (page.parent / t).exists()]
    assert missing == []


def test_the_readme_stays_short() -> None:
    """The README is the front page (the question, a picture, the commands, links); the
    rest lives in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
