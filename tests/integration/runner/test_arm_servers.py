"""Arm servers: command-started servers (ready, stop command, timeouts) and sim failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specload.config.scenario import Arm
from specload.runner.processes import free_port
from specload.runner.servers import CommandServer, ServerError, SimServer, UrlServer


def command_arm(start: str, port: int, **extra) -> Arm:
    return Arm.model_validate({"name": "c", "command": {
        "start": start, "base_url": f"http://127.0.0.1:{port}",
        "ready_url": f"http://127.0.0.1:{port}/", **extra}})


def test_command_server_ready_then_stop_command_and_signal(tmp_path: Path) -> None:
    port = free_port()
    flag = tmp_path / "stopped"
    arm = command_arm(f"exec {sys.executable} -m http.server {port} --bind 127.0.0.1", port,
                      stop=f"touch {flag}", ready_timeout_s=30)
    server = CommandServer(arm)
    assert server.start(tmp_path / "server.log") == f"http://127.0.0.1:{port}"
    assert server.problem(last_chunk_at=None) is None
    proc = server.proc
    server.stop()
    assert flag.exists()
    assert proc is not None and proc.poll() is not None


def test_command_that_fails_is_reported_with_its_output(tmp_path: Path) -> None:
    server = CommandServer(command_arm("echo no GPU here; exit 3", free_port()))
    with pytest.raises(ServerError, match=r"start command exited with status 3.*no GPU here"):
        server.start(tmp_path / "server.log")


def test_command_never_ready_times_out_and_is_stopped(tmp_path: Path) -> None:
    server = CommandServer(command_arm("sleep 60", free_port(), ready_timeout_s=1))
    with pytest.raises(ServerError, match="not ready after 1 s"):
        server.start(tmp_path / "server.log")
    assert server.proc is None  # stopped and forgotten


def test_url_server_that_is_not_running_says_what_it_got(tmp_path: Path) -> None:
    port = free_port()
    arm = Arm.model_validate({"name": "u", "url": f"http://127.0.0.1:{port}"})
    with pytest.raises(ServerError, match=f"127.0.0.1:{port}/health: connection refused"):
        UrlServer(arm).start(tmp_path / "server.log")


def test_readiness_falls_back_to_models_when_there_is_no_health_route(
        tmp_path: Path, sim_server) -> None:
    sim = sim_server(flavor="llama-cpp-python")
    server = UrlServer(Arm.model_validate({"name": "u", "url": sim.url}))
    assert server.start(tmp_path / "server.log") == sim.url
    assert [(r.url.removeprefix(sim.url), r.detail) for r in server.ready_results] == [
        ("/health", "HTTP 404"), ("/v1/models", "HTTP 200")]
    assert server.models() == ["meta-llama/Llama-3.1-8B-Instruct"]


def test_sim_that_cannot_start_says_why(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("not: a profile\n")
    arm = Arm.model_validate({"name": "s", "sim": {"profile": str(bad), "spec": "on"}})
    with pytest.raises(ServerError, match="simulated server exited with status"):
        SimServer(arm).start(tmp_path / "server.log")


def test_a_command_arm_whose_port_another_server_holds_fails_before_starting(
        tmp_path: Path) -> None:
    """Two command arms sharing a port once ran at the same time: the second server could
    not bind, and the first answered its readiness checks and its requests."""
    port = free_port()
    other = CommandServer(command_arm(f"exec {sys.executable} -m http.server {port} "
                                      "--bind 127.0.0.1", port, ready_timeout_s=30))
    other.start(tmp_path / "other.log")
    try:
        flag = tmp_path / "started"
        server = CommandServer(command_arm(f"touch {flag}; sleep 60", port))
        with pytest.raises(ServerError, match=f"something already listens at "
                                              f"http://127.0.0.1:{port} before the start"):
            server.start(tmp_path / "server.log")
        assert not flag.exists() and server.proc is None
    finally:
        other.stop()
