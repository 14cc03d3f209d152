"""The report package reads files only: it must not pull in Locust, loadgen or runner."""

from __future__ import annotations

import json
import subprocess
import sys


def test_report_imports_no_locust_loadgen_or_runner() -> None:
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
