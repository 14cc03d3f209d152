"""The command line: subcommands listed, user errors as one line, no traceback."""

import subprocess
import sys

import pytest

from specload.cli import build_parser, main


def test_help_lists_every_subcommand() -> None:
    text = build_parser().format_help()
    for name in ("sweep", "worker", "report", "sim", "sim-curve"):
        assert name in text


def test_console_script_help_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "specload.cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "sweep" in done.stdout


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_user_error_is_one_line(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("specload: error: ")
    assert "Traceback" not in err[0]
