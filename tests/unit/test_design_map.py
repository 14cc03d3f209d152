"""docs/design.md's module map names every module under src/specload, and nothing else.

The map is the Layout block: under `src/specload/`, a line indented two spaces names
top-level modules or a package (`loadgen/`), a line indented two more names that
package's modules or packages (`runner/stages/`), and so on; the first column holds
comma-separated names, which may be globs (`locustfile_*.py`). A package's `__init__.py`
is the package's own line.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "specload"


def mapped() -> set[str]:
    """Every `.py` pattern of the map, as a path under src/specload."""
    text = (ROOT / "docs" / "design.md").read_text()
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("src/specload/"))
    patterns: set[str] = set()
    folders = {0: ""}  # the package a line of each depth is in
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break  # the next top-level folder (locustfiles/, scenarios/, ...)
        depth = (len(line) - len(line.lstrip(" "))) // 2
        if depth > max(folders) + 1:
            continue  # a description carried over from the line above
        names = [n.strip() for n in re.split(r"\s{2,}", line.strip())[0].split(",")]
        folders = {d: f for d, f in folders.items() if d < depth}
        folder = next((n for n in names if n.endswith("/")), None)
        if folder is not None:
            folders[depth] = folders[depth - 1] + folder
        patterns |= {folders[depth - 1] + n for n in names if n.endswith(".py")}
    return patterns


def modules() -> set[str]:
    """Every module, a package's `__init__.py` only when it holds code of its own."""
    return {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
            if p.name != "__init__.py" or re.search(r"^(def|class) ", p.read_text(), re.M)}


def test_every_module_is_in_the_map() -> None:
    patterns = mapped()
    missing = sorted(m for m in modules() if not any(fnmatch.fnmatch(m, p) for p in patterns))
    assert missing == [], f"add these to docs/design.md's Layout: {missing}"


def test_the_map_names_no_module_that_is_gone() -> None:
    present = modules()
    stale = sorted(p for p in mapped() if not fnmatch.filter(present, p))
    assert stale == [], f"docs/design.md's Layout names modules that do not exist: {stale}"


def test_the_module_map_lists_every_module_with_its_docstring() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "module_map.py")],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    listed = {line.split()[0] for line in out.splitlines()[1:]}
    names = {Path(m).name for m in modules() if not m.endswith("__init__.py")}
    assert names <= listed
    bare = [line.split()[0] for line in out.splitlines()[1:] if len(line.split()) == 1]
    assert bare == [], f"modules without a docstring: {bare}"
