"""The command line: subcommands listed, user errors as one line, no traceback."""

import os
import signal
import subprocess
import sys

import pytest

from specload.cli import build_parser, main
from specload.report import render


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


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    """`specload report RUN | head`: once the pipe's reader has gone, the command ends
    with SIGPIPE's shell status (141) and no traceback or "Exception ignored" line."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first line is written
    try:
        done = subprocess.run([sys.executable, "-m", "specload.cli", "sim-curve",
                               "--ladder", "1,2"], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (128 + signal.SIGPIPE, "")


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(monkeypatch) -> None:
    def fails(_args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")  # a server's socket, say

    monkeypatch.setattr(render, "main", fails)
    with pytest.raises(BrokenPipeError):
        main(["report", "run"])
