"""report.html opened in headless Chromium: every figure renders, no JavaScript errors.

The run folder is a small synthetic sweep from scripts/bench_report.py; the report is
built by the real `specload report` command. Chromium is Debian's `chromium` package;
the test skips when it is absent, unless CI=true (then a missing browser fails).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
FIGURES = 8


def _bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report",
                                                  REPO / "scripts" / "bench_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed (apt-get install -y chromium)")
    pytest.skip("chromium is not installed")


def test_report_renders_every_figure_without_js_errors(tmp_path: Path) -> None:
    browser = _chromium()
    run = tmp_path / "run"
    _bench_module().generate(run, rows=1500)
    specload = Path(sys.executable).with_name("specload")
    done = subprocess.run([str(specload), "report", str(run)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    page = run / "report.html"
    assert f"report: {page}" in done.stdout
    shown = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    dom, log = shown.stdout, shown.stderr
    assert shown.returncode == 0, log[-2000:]
    assert dom.count('class="plot-container') == FIGURES
    assert dom.count('class="main-svg"') >= FIGURES
    assert "Uncaught" not in log and "CONSOLE" not in log, log[-2000:]
