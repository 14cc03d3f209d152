"""Every shipped locustfile lists specload's options with Locust's: `python FILE --help`.

`locust -f FILE --help` cannot: Locust 2.47 prints its help before it imports the
locustfile that registers them (see `loadgen/options.py`). The last test pins that
behaviour, so that a Locust that fixes it (locustio/locust#2917) shows up here and the
docs can say `locust -f FILE --help` again.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import REPO

# (completions.py registers the same options as chat.py, through the same import)
OPTIONS = {"chat.py": ["--max-tokens", "--ignore-eos", "--prompts"],
           "ladder.py": ["--max-tokens", "--ladder", "--warmup", "--measure", "--drain"]}


def _help(*cmd: str) -> str:
    done = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("locustfile", sorted(OPTIONS))
def test_python_locustfile_help_lists_specloads_options(locustfile: str) -> None:
    text = _help(sys.executable, str(REPO / "locustfiles" / locustfile))
    assert "--headless" in text  # Locust's own options too
    for option in OPTIONS[locustfile]:
        assert f"  {option} " in text, option
    assert ("--ladder" in text) == (locustfile == "ladder.py")


def test_locusts_own_help_runs_before_the_locustfile_is_imported() -> None:
    text = _help(sys.executable, "-m", "locust", "-f", str(REPO / "locustfiles" / "chat.py"))
    assert "--headless" in text and "--max-tokens" not in text
