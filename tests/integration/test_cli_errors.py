"""The real `specload sweep` process: user mistakes are one line on stderr and status 2.

Covers what only a subprocess shows: no traceback, nothing on stdout, no run folder
created, for a broken scenario and for a results location that cannot be written
(tests run as root, for whom a read-only folder is still writable, so the location is
under a regular file: /dev/null/x).
"""

from __future__ import annotations

import socket
from pathlib import Path

import yaml

SCENARIO = {
    "name": "ok", "ladder": [1], "warmup_s": 0, "measure_s": 1,
    "arms": [{"name": "a", "sim": {"profile": "h100-llama8b-eagle3", "spec": "on"}}],
}


def test_results_location_not_writable(tmp_path: Path, write_scenario, run_sweep) -> None:
    res = run_sweep(str(write_scenario(SCENARIO)), "--out", "/dev/null/x", timeout=60)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == (
        "specload: error: cannot write results under /dev/null/x: Not a directory\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = run_sweep(str(write_scenario(SCENARIO)), "--out", str(blocker / "reports"), timeout=60)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == (f"specload: error: cannot write results under {blocker}/reports: "
                          "Not a directory\n")


def test_broken_scenario_is_one_line_from_the_real_command(write_scenario, run_sweep,
                                                           tmp_path: Path) -> None:
    bad = write_scenario({**SCENARIO, "ladder": [2, 1]}, name="bad.yaml")
    res = run_sweep(str(bad), "--out", "out", timeout=60)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == (f"specload: error: {bad}: 1 problem(s):\n"
                          "  ladder: rung 1: the ladder must increase, but 1 follows 2\n")
    assert not (tmp_path / "out").exists()
    (tmp_path / "syntax.yaml").write_text(yaml.safe_dump(SCENARIO) + "ladder: [1\n")
    res = run_sweep("syntax.yaml", timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("specload: error: syntax.yaml:") and res.stderr.count("\n") == 1


def test_a_metrics_port_in_use_is_one_line_and_makes_no_run_folder(
        write_scenario, run_sweep, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = run_sweep(str(write_scenario(SCENARIO)), "--out", "out", "--metrics-port",
                        str(port), timeout=60)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == (f"specload: error: --metrics-port {port}: cannot listen on "
                          "127.0.0.1 (Address already in use)\n")
    assert not (tmp_path / "out").exists()
