"""`specload sim` as a process: ready line, clean exit on signals, one-line config errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from specload.sim.profile import PROFILES_DIR


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_server_with_status_zero(sim_server, sig: signal.Signals) -> None:
    srv = sim_server(profile="seed-glm", spec="off")
    assert srv.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(srv.url + "/health", timeout=10) as resp:
        assert resp.status == 200
    srv.proc.send_signal(sig)
    assert srv.proc.wait(timeout=15) == 0
    assert "Traceback" not in srv.log_text()


def test_signal_during_open_streams_still_exits_zero(sim_server) -> None:
    srv = sim_server(profile="seed-glm", spec="on")
    body = b'{"prompt": "slow", "max_tokens": 4000, "ignore_eos": true, "stream": true}'
    conns = [urllib.request.urlopen(urllib.request.Request(
        srv.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}),
        timeout=30) for _ in range(3)]
    for c in conns:
        assert c.readline().startswith(b"data: ")
    srv.proc.terminate()
    assert srv.proc.wait(timeout=15) == 0
    for c in conns:
        c.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specload.cli", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize(("args", "needle"), [
    (["sim", "--profile", "no-such-profile", "--port", "0"], "no-such-profile"),
    (["sim", "--profile", "seed-glm", "-k", "9", "--port", "0"], "num-speculative-tokens"),
    (["sim", "--profile", "seed-glm", "--spec", "schedule", "-k", "2", "--port", "0"],
     "--spec schedule takes k by batch size"),
    (["sim", "--spec", "adaptive", "--flavor", "llamacpp", "--port", "0"],
     "the llamacpp flavor's engine has no adaptive speculation of its own"),
    (["sim", "--spec", "adaptive", "--profile", "seed-glm", "--flavor", "sglang", "--port",
      "0"], "drafts up to 7 tokens"),
    (["sim", "--spec", "sometimes", "--port", "0"], "invalid choice: 'sometimes'"),
    (["sim", "--fault", "cut:0.6", "--fault", "error500:0.6", "--port", "0"], "add up"),
    (["sim", "--flavor", "tgi", "--api-key", "k", "--port", "0"], "--api-key"),
    (["sim", "--api-key-env", "SPECLOAD_NO_SUCH_VARIABLE", "--port", "0"], "unset"),
    (["sim", "--api-key", "k", "--api-key-env", "HOME", "--port", "0"], "not together"),
    (["sim", "--flavor", "ollama", "--metrics", "--port", "0"], "no /metrics"),
    (["sim-curve", "--ladder", "1,x"], "--ladder"),
    (["sim-curve", "--max-tokens", "999999"], "--max-tokens"),
])
def test_config_errors_are_one_line_exit_2(args: list[str], needle: str) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("specload: error:")


def test_bad_profile_yaml_names_the_key(tmp_path) -> None:
    path = tmp_path / "p.yaml"
    text = (PROFILES_DIR / "seed-glm.yaml").read_text().replace("  eta_mem:", "  eta_memory:")
    path.write_text(text)
    proc = run_cli("sim-curve", "--profile", str(path), "--ladder", "1")
    assert proc.returncode == 2 and "hardware.eta_mem" in proc.stderr


def test_sim_curve_prints_table_and_json() -> None:
    proc = run_cli("sim-curve", "--profile", "h100-llama8b-eagle3", "--ladder", "1,4")
    assert proc.returncode == 0
    rows = [line.split() for line in proc.stdout.splitlines() if line[:1] != "#"]
    assert rows[0][0] == "C" and [r[0] for r in rows[1:]] == ["1", "4"]
    proc = run_cli("sim-curve", "--profile", "h100-llama8b-eagle3", "--ladder", "2",
                   "--spec", "off", "--json", "--max-tokens", "64")
    points = json.loads(proc.stdout)
    assert points[0]["users"] == 2 and points[0]["tokens_per_chunk"] == 1.0
