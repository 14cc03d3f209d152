"""Finished rungs of a repeat and folding a resumed part's files into the repeat's files."""

from __future__ import annotations

import csv
from pathlib import Path

from specload.runner.resume_parts import cut_partial_rows, finished_levels, merge_part


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="") as fh:
        return list(csv.reader(fh))


STEPS = ["rung", "users", "warmup_start", "measure_start", "measure_end"]
FAIL = ["Method", "Name", "Error", "Occurrences"]


def test_finished_levels_reads_the_steps_file(tmp_path: Path) -> None:
    assert finished_levels(tmp_path / "locust") == []
    write_csv(tmp_path / "locust_rungs.csv", STEPS, [[0, 1, 1, 2, 3], [1, 2, 3, 4, 5]])
    assert finished_levels(tmp_path / "locust") == [1, 2]


def test_merge_appends_rows_renumbers_rungs_and_sums_failures(tmp_path: Path) -> None:
    main, part = tmp_path / "locust", tmp_path / "part-2" / "locust"
    write_csv(Path(f"{main}_rungs.csv"), STEPS, [[0, 1, 10, 12, 15]])
    write_csv(Path(f"{part}_rungs.csv"), STEPS, [[0, 5, 20, 22, 25], [1, 10, 25, 27, 30]])
    write_csv(Path(f"{main}_requests.csv"), ["request_id", "end"], [["a-1", 13]])
    write_csv(Path(f"{part}_requests.csv"), ["request_id", "end"], [["b-1", 23], ["b-2", 28]])
    write_csv(Path(f"{main}_failures.csv"), FAIL, [["POST", "chat", "cut", 2]])
    write_csv(Path(f"{part}_failures.csv"), FAIL,
              [["POST", "chat", "cut", 3], ["POST", "chat", "http 500", 1]])
    write_csv(Path(f"{part}_client_stats.csv"), ["ts", "cpu_percent"], [[21, 50]])
    write_csv(Path(f"{main}_clock.csv"), ["ts", "client_id"], [[11, "h-1"]])
    write_csv(Path(f"{part}_clock.csv"), ["ts", "client_id"], [[21, "h-2"]])

    merge_part(part, main, [1, 2, 5, 10])

    assert [r[:2] for r in read_csv(Path(f"{main}_rungs.csv"))] == [
        ["rung", "users"], ["0", "1"], ["2", "5"], ["3", "10"]]
    assert [r[0] for r in read_csv(Path(f"{main}_requests.csv"))] == [
        "request_id", "a-1", "b-1", "b-2"]
    assert read_csv(Path(f"{main}_failures.csv")) == [
        FAIL, ["POST", "chat", "cut", "5"], ["POST", "chat", "http 500", "1"]]
    # a file the main run never wrote is created with its header
    assert read_csv(Path(f"{main}_client_stats.csv")) == [["ts", "cpu_percent"], ["21", "50"]]
    assert finished_levels(main) == [1, 5, 10]
    # each part's workers keep their own clock rounds, found by client_id
    assert read_csv(Path(f"{main}_clock.csv"))[1:] == [["11", "h-1"], ["21", "h-2"]]


def test_a_part_with_a_column_more_than_an_older_runs_file_keeps_that_files_columns(
        tmp_path: Path) -> None:
    """Resuming a run folder an older specload wrote: the part's rows are put under the
    folder's own header (a column it lacks left out), so the file still reads."""
    main, part = tmp_path / "locust", tmp_path / "part-2" / "locust"
    write_csv(Path(f"{main}_rungs.csv"), STEPS, [[0, 1, 10, 12, 15]])
    write_csv(Path(f"{part}_rungs.csv"), STEPS, [[0, 5, 20, 22, 25]])
    write_csv(Path(f"{main}_client_stats.csv"), ["ts", "chunks", "in_flight"], [[11, 9, 1]])
    write_csv(Path(f"{part}_client_stats.csv"), ["ts", "chunks", "in_flight", "tokens"],
              [[21, 8, 2, 30]])

    merge_part(part, main, [1, 5])

    assert read_csv(Path(f"{main}_client_stats.csv")) == [
        ["ts", "chunks", "in_flight"], ["11", "9", "1"], ["21", "8", "2"]]


def test_a_half_written_metrics_sample_is_cut_before_the_resumed_sampler_appends(
        tmp_path: Path) -> None:
    """A full disk stopped the sampler inside a row; the resumed server's sampler appends
    to the same file, so the torn row would join its first row (4 fields where the
    header has 3: the report could not read the file; seen in CI's full-disk test)."""
    prefix = tmp_path / "locust"
    metrics = Path(f"{prefix}_server_metrics.csv")
    metrics.write_text("ts,metric,value\n1.0,vllm:generation_tokens_total,5\n2.0,vllm:gen")
    assert cut_partial_rows(prefix) == [metrics]
    assert metrics.read_text() == "ts,metric,value\n1.0,vllm:generation_tokens_total,5\n"
