"""A saturated load process is noticed: client stats are written and the report warns.

Every shipped locustfile must run the client-stats probe (CPU share and event-loop lag
of each load process -> `<prefix>_client_stats.csv`). A load process starved on purpose
(a greenlet burning the CPU in 40 ms bursts, `tests/support/cpu_burner.py`) must make the
report flag its rung: as a saturated client, with the advice to add processes or
workers, or, when the machine is so busy that the process could not even use a whole
core, as a client short of CPU.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from specload.runfiles.records import CLIENT_STATS_COLUMNS, CLIENT_STATS_SUFFIX
from tests.support import REPO

BURNER = REPO / "tests" / "support" / "cpu_burner.py"

pytestmark = pytest.mark.slow


def _locust(locustfiles: str, host: str, prefix: Path, run_time: str,
            extra: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "locust", "-f", locustfiles, "--headless",
           "--only-summary", "--host", host, "--csv", str(prefix), "--max-tokens", "32",
           "--ignore-eos", "-t", run_time, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)


def _client_stats(prefix: Path) -> list[dict[str, str]]:
    path = Path(f"{prefix}{CLIENT_STATS_SUFFIX}")
    assert path.exists(), f"no {path.name}: the client-stats probe is not active"
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == CLIENT_STATS_COLUMNS
        return list(reader)


@pytest.mark.parametrize("locustfile", ["chat.py", "completions.py", "ladder.py"])
def test_every_locustfile_writes_client_stats(sim_server, tmp_path: Path,
                                              locustfile: str) -> None:
    sim = sim_server(profile="bench-20ms", spec="off", trace=False)
    prefix = tmp_path / "run" / "locust"
    extra = (["--ladder", "2", "--warmup", "1", "--measure", "3"] if locustfile == "ladder.py"
             else ["-u", "2", "-r", "2"])
    done = _locust(str(REPO / "locustfiles" / locustfile), sim.url, prefix, "4s", extra)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _client_stats(prefix)
    assert rows  # once a second; a busy machine may start the 4 s run late
    assert all(0 <= float(r["cpu_percent"]) <= 100 * 64 for r in rows)
    assert max(int(r["users"]) for r in rows) == 2


def test_starved_load_process_is_reported_as_saturated(sim_server, tmp_path: Path) -> None:
    sim = sim_server(profile="bench-20ms", spec="off", trace=False)
    prefix = tmp_path / "starved" / "locust"
    files = f"{REPO / 'locustfiles' / 'ladder.py'},{BURNER}"
    done = _locust(files, sim.url, prefix, "30s",
                   ["--ladder", "5", "--warmup", "2", "--measure", "6"])
    assert done.returncode == 0, done.stderr[-2000:]
    rows = _client_stats(prefix)
    assert max(float(r["lag_p99_ms"]) for r in rows) > 10.0

    report = subprocess.run([sys.executable, "-m", "specload.cli", "report", str(prefix)],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    summary = json.loads(next(tmp_path.rglob("summary.json")).read_text())
    # CPU above 90%: "saturated, add processes"; on a machine too busy to give the
    # starved process its core, the report says the machine was short of CPU instead
    flagged = [w for w in summary["warnings"]
               if w["kind"] in ("client_saturated", "client_starved")]
    assert [w["concurrency"] for w in flagged] == [5], (summary["warnings"], rows)
    advice = {"client_saturated": "add --processes or workers",
              "client_starved": "short of CPU"}[flagged[0]["kind"]]
    assert advice in flagged[0]["message"]
    assert "load generator" in report.stdout
