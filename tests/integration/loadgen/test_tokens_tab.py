"""The Tokens tab as Locust's web UI serves it, without a browser (browser: test_tokens_tab_ui).

A web-UI run of the ladder without `--csv` (no run folder: the tab still gets every
row): the index page registers the tab and loads its script, `/stats/requests` carries
the tab's per-rung table, and `/specload/live` has the same rungs, settled time bins, the
ladder's phases and the load processes' health.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from specload.report.rung_columns import View, names
from specload.report.table import text
from specload.runner.processes import free_port
from tests.support import REPO


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return bytes(resp.read())


def live(base: str) -> dict[str, Any]:
    return dict(json.loads(get(base + "/specload/live")))


def test_web_ui_serves_the_tokens_tab(fake_stream_server: Any, tmp_path: Path) -> None:
    url = fake_stream_server("--step-ms", "20")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "locust.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "ladder.py"),
         "--host", url, "--web-port", str(port), "--autostart", "--autoquit", "15",
         "--ladder", "3", "--warmup", "0.5", "--measure", "1", "--min-requests", "2",
         "--max-tokens", "12"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        deadline = time.monotonic() + 40
        got: dict[str, Any] = {}
        while time.monotonic() < deadline and not got.get("rungs"):
            time.sleep(0.5)
            try:
                got = live(base)
            except OSError:
                assert proc.poll() is None, log.read_text()[-2000:]
        assert [r["concurrency"] for r in got["rungs"]] == [3], log.read_text()[-2000:]
        assert all(r["output_tok_s"] > 0 and r["requests"] > 0 for r in got["rungs"])
        assert got["series"]["t"] and max(got["series"]["output_tok_s"]) > 0
        assert got["settled"] <= got["now"]
        assert [(p["rung"], p["phase"]) for p in got["phases"][:2]] == [
            (0, "warmup"), (0, "measure")]
        assert got["load"]["processes"] == 1 and got["client"]["t"]

        page = get(base + "/").decode()
        assert '<script src="./specload/tokens_tab.js"></script>' in page
        assert '"extended_tabs": [{"key": "tokens", "title": "Tokens"}]' in page
        assert "plotly" not in page  # loaded by the tab's script, only when it opens
        assert b"specload" in get(base + "/specload/tokens_tab.js")
        assert len(get(base + "/specload/plotly.min.js")) > 1_000_000

        raw = [get(base + "/stats/requests") for _ in range(2)]  # Locust memoizes it 2 s
        assert [r.count(b'"extended_stats"') for r in raw] == [1, 1]
        stats = json.loads(raw[-1])
        assert stats["state"] in ("running", "stopped")  # Locust's own report is intact
        (table,) = [t for t in stats["extended_stats"] if t["key"] == "tokens"]
        got = live(base)
        assert table["data"] == [
            {k: text(float("inf") if r[k] == "inf" else r[k]) for k in names(View.LIVE)}
            for r in got["rungs"]]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    # until the SIGTERM: Locust 2.47 may then close its files under its own writers
    assert "Traceback" not in log.read_text().split("Got SIGTERM signal")[0]

