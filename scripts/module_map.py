"""Print specload's layout: each package and module under src/specload with the first
sentence of its own docstring, so the tree is read from the code and cannot go stale.

    python scripts/module_map.py            # the whole tree
    python scripts/module_map.py runner     # one package
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "specload"
WIDTH = 30


def summary(path: Path) -> str:
    """The first sentence of a module's docstring ('' if it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return paragraph.split(". ")[0].rstrip(".")


def lines(folder: Path, depth: int = 1) -> list[str]:
    out = []
    for path in sorted(folder.iterdir()):
        pad = "  " * depth
        if path.is_dir() and (path / "__init__.py").exists():
            out.append(f"{pad}{path.name + '/':<{WIDTH - len(pad)}}{summary(path / '__init__.py')}")
            out += lines(path, depth + 1)
        elif path.suffix == ".py" and path.name != "__init__.py":
            out.append(f"{pad}{path.name:<{WIDTH - len(pad)}}{summary(path)}")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Print specload's packages and modules, "
                                     "each with the first sentence of its docstring.")
    parser.add_argument("package", nargs="?", default="", help="one package (runner, sim, ...)")
    args = parser.parse_args(argv)
    folder = SRC / args.package if args.package else SRC
    if not (folder / "__init__.py").exists():
        print(f"module_map: no package {args.package!r} under {SRC}", file=sys.stderr)
        return 2
    print(f"{folder.relative_to(SRC.parent)}/")
    print("\n".join(lines(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
