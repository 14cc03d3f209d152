"""The layering rules, read from every module's imports (function-level ones included).

- `sim` is an island: it imports nothing from specload outside `specload.sim`, and the
  engine registry (`engines/`) nothing from it: it names the sim's
  flavours as text, and tests/unit/test_engines.py holds the two together. Nor does the
  registry import the stages (report, runner, loadgen) or Locust: every process loads it.
- `report` reads files only: nothing from locust, gevent, `loadgen` or `runner`.
- What the report and runner share (`config/`, `traffic/`, `runfiles/`, `ladder/`,
  `host/`, `engines/`, `errors`) imports nothing from `loadgen` (imported only inside
  Locust processes), `runner`, locust or gevent; nor do the stages' inputs (`config/`,
  `traffic/`, `runfiles/`, `ladder/`, `host/`) import the stages (`config/` checks a
  `sim:` arm with the simulator's rules).
And at run time, importing the report and the CLI does not load Locust.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import specload

SRC = Path(specload.__file__).resolve().parent


def _imports(path: Path) -> Iterator[str]:
    """Every module a file imports, absolute (relative imports resolved)."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _files(pattern: str) -> list[Path]:
    return sorted(SRC.glob(pattern))


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [f"{f.relative_to(SRC)} imports {name}" for f in files for name in _imports(f)
            if name in forbidden or name.startswith(tuple(p + "." for p in forbidden))]


def test_sim_is_an_island() -> None:
    outside = [f"{f.relative_to(SRC)} imports {name}" for f in _files("sim/**/*.py")
               for name in _imports(f)
               if name.startswith("specload") and not name.startswith("specload.sim")]
    assert outside == []


def test_the_engines_reach_neither_the_simulator_nor_the_stages() -> None:
    files = _files("engines/*.py")
    stages = ("specload.sim", "specload.report", "specload.runner", "specload.loadgen",
              "locust", "gevent")
    assert _violations(files, stages) == []


def test_report_reads_files_only() -> None:
    forbidden = ("locust", "gevent", "geventhttpclient", "specload.loadgen", "specload.runner")
    assert _violations(_files("report/**/*.py"), forbidden) == []


SHARED = ("config", "traffic", "runfiles", "ladder", "host", "engines")


@pytest.mark.parametrize("package", SHARED)
def test_shared_packages_stay_out_of_locust(package: str) -> None:
    forbidden = ("locust", "gevent", "geventhttpclient", "specload.loadgen", "specload.runner")
    assert _violations([*_files(f"{package}/**/*.py"), SRC / "errors.py"], forbidden) == []


@pytest.mark.parametrize("package", ["config", "traffic", "runfiles", "ladder", "host"])
def test_shared_packages_import_no_stage(package: str) -> None:
    # the scenario checks a `sim:` arm with the simulator's own rules (profiles, faults)
    stages = ("specload.report", "specload.runner", "specload.loadgen",
              *(() if package == "config" else ("specload.sim",)))
    assert _violations(_files(f"{package}/**/*.py"), stages) == []


def test_the_root_holds_the_cli_and_packages_only() -> None:
    # a new module goes into the package of its role (docs/design.md's Layout)
    assert sorted(p.name for p in SRC.glob("*.py")) == [
        "__init__.py", "cli.py", "errors.py", "fit_run.py"]


def test_the_rules_see_imports() -> None:
    # the checker itself: a file with each kind of import
    found = set(_imports(SRC / "report" / "render.py"))
    assert {"pandas", "specload.report.figures", "specload.report.aggregate.combine_reps"} <= found


def test_report_and_cli_load_no_locust_at_run_time() -> None:
    code = (
        "import json, sys\n"
        "import specload.cli\n"
        "import specload.report.render, specload.report.figures, specload.report.aggregate\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'locust' or m.startswith("
        "('locust.', 'gevent', 'specload.loadgen', 'specload.runner')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout) == []


def _loaded_after(imports: str, prefixes: tuple[str, ...]) -> list[str]:
    code = (f"import json, sys\n{imports}\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_the_report_draws_its_figures_without_plotly_py() -> None:
    """Figures are plotly.js data (report/plotjs.py); plotly.py's objects are slow to load."""
    imports = ("import specload.report.render, specload.report.compare\n"
               "from specload.report import figures\n"
               "from tests.support.figure_inputs import summary, pair\n"
               "figures.all_figures(summary(), [pair()])")
    assert _loaded_after(imports, ("plotly", "_plotly_utils")) == []


def test_where_plotly_js_lies_is_found_without_loading_numbers_or_plotly() -> None:
    assert _loaded_after("import specload.report.plotjs", ("numpy", "pandas", "plotly")) == []


def test_the_report_loads_the_simulator_only_for_a_sim_arm() -> None:
    """A run on real engines is reported without the simulator's profiles (or YAML)."""
    loaded = _loaded_after("import specload.cli, specload.report.render", ("specload", "yaml"))
    assert [m for m in loaded if m.startswith("specload.sim") or m == "yaml"] == []
