"""Progress lines and the client-side tok/s fallback."""

from __future__ import annotations

from pathlib import Path

from specload.runner.progress import client_tok_s, fmt_s, live_tok_s, progress_line, rungs_rows


def test_fmt_s() -> None:
    assert [fmt_s(x) for x in (0, 9.9, 60, 75, 3599, -3)] == [
        "0s", "9s", "1m00s", "1m15s", "59m59s", "0s"]


def test_progress_line_names_arm_rung_users_times_and_rate() -> None:
    row = {"rung": "2", "users": "10", "measure_start": "0", "measure_end": "1"}
    line = progress_line("spec-on rep 2", row, [1, 5, 10, 30], 75, 130, 214.53, "server")
    assert line == ("[spec-on rep 2] rung 3/4 C=10 done | elapsed 1m15s, ETA 2m10s | "
                    "214.5 tok/s (server)")
    assert progress_line("a", row, [10], 1, 0, None, "x").endswith("| tok/s n/a")


def test_client_fallback_counts_tokens_of_requests_ending_in_the_window(tmp_path: Path) -> None:
    prefix = tmp_path / "locust"
    assert rungs_rows(prefix) == [] and client_tok_s(prefix, 0, 10) is None
    Path(f"{prefix}_requests.csv").write_text(
        "request_id,end,output_tokens\na,5,100\nb,9.5,60\nc,11,500\nd,bad,7\n")
    assert client_tok_s(prefix, 0, 10) == 16.0
    row = {"measure_start": "0", "measure_end": "10"}
    assert live_tok_s(row, None, prefix) == (16.0, "client, by request end")
