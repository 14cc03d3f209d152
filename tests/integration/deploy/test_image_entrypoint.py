"""The Dockerfile passes hadolint, and the image's entrypoint sends each kind of argument
to the right program (run here with this checkout's specload and Locust on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support import REPO
from tests.support.deploy import hadolint

ENTRYPOINT = REPO / "deploy" / "docker" / "entrypoint.sh"
SCENARIO = {
    "name": "in-a-container", "ladder": [1, 10],
    "distributed": {"workers": 3, "master_bind_host": "0.0.0.0"},
    "arms": [{"name": "remote", "url": "http://vllm:8000", "spec": "on"}],
}


def entrypoint(*args: str, cwd: Path, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["sh", str(ENTRYPOINT), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PATH": path, **(env or {})})


def test_dockerfile_passes_hadolint() -> None:
    done = subprocess.run([hadolint(), str(REPO / "Dockerfile")], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_subcommands_run_specload_and_options_run_locust(tmp_path: Path) -> None:
    assert "COMMAND" in entrypoint(cwd=tmp_path).stdout
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SCENARIO))
    plan = entrypoint("sweep", "s.yaml", "--dry-run", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "load: master + 3 workers (specload worker " in plan.stdout
    # the operator's way: Locust options, specload's ladder locustfile by default ...
    listed = entrypoint("--list", cwd=tmp_path)
    assert listed.returncode == 0 and "ChatStreamUser" in listed.stdout
    # ... or the one it mounts as ./locustfile.py
    (tmp_path / "locustfile.py").write_text(
        "from locust import HttpUser, task\n\n\nclass Mounted(HttpUser):\n"
        "    @task\n    def t(self) -> None:\n        pass\n")
    listed = entrypoint("--list", cwd=tmp_path)
    assert "Mounted" in listed.stdout and "ChatStreamUser" not in listed.stdout
