"""docs/contributing.md's recipes stay true to the code.

Each recipe (a `## ` section) names files, registries and the tests that hold it. What
must hold: every file path it names exists (from the checkout, or from src/specload/);
every `module.NAME` it names (`report/figures.FIGURES`, `engines.BUILT_IN`) is an
attribute of that module; and each recipe ends by naming at least one test module
that exists. The new-engine recipe's code is also run, as a plug-in package, by
tests/integration/runner/test_engine_plugin.py.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "specload"
GUIDE = ROOT / "docs" / "contributing.md"
TICKED = re.compile(r"`([^`\n]+)`")


def _recipes() -> dict[str, str]:
    parts = re.split(r"^## ", GUIDE.read_text(), flags=re.M)[1:]
    return {part.split("\n", 1)[0]: part for part in parts}


def _module(path: str) -> str | None:
    """The dotted module a path names (`report/figures`, `engines`), if it is one."""
    name = path.removeprefix("src/specload/").removesuffix(".py").replace("/", ".")
    for candidate in (PACKAGE / f"{name.replace('.', '/')}.py",
                      PACKAGE / name.replace(".", "/") / "__init__.py"):
        if candidate.exists():
            return f"specload.{name}"
    return None


@pytest.mark.parametrize("title", list(_recipes()))
def test_every_file_a_recipe_names_exists(title: str) -> None:
    named = [t for t in TICKED.findall(_recipes()[title]) if re.fullmatch(r"[\w./-]+\.py", t)]
    missing = [p for p in named if not ((ROOT / p).exists() or (PACKAGE / p).exists())]
    assert named and missing == [], (title, missing)


@pytest.mark.parametrize("title", list(_recipes()))
def test_every_registry_a_recipe_names_is_there(title: str) -> None:
    refs = [m.groups() for t in TICKED.findall(_recipes()[title])
            if (m := re.fullmatch(r"([\w/]+)\.([A-Z_][A-Za-z_]*)", t))]
    found = [(path, name) for path, name in refs if _module(path)]
    gone = [f"{path}.{name}" for path, name in found
            if not hasattr(importlib.import_module(str(_module(path))), name)]
    assert gone == [], (title, gone)


@pytest.mark.parametrize("title", list(_recipes()))
def test_each_recipe_names_the_test_that_holds_it(title: str) -> None:
    text = _recipes()[title]
    held = text[text.rfind("Held by"):] if "Held by" in text else ""
    tests = [t for t in TICKED.findall(held) if t.startswith("tests/")]
    assert tests and all((ROOT / t).exists() for t in tests), (title, tests)
