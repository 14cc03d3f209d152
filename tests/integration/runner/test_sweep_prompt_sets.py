"""The speculation prompt sets through a sweep: a file in each set's published format
(written here: MT-Bench's and Spec-Bench's question.jsonl, a SPEED-Bench split as
Model-Optimizer's parquet) runs spec-on against spec-off on the simulator, and the
report's per-category figures are the set's own categories, every request recorded under
its prompt's."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.sweeps import read_csv, run_dir_of, run_sweep, write_scenario

pytestmark = [pytest.mark.slow, pytest.mark.long(100)]

TOPICS = ("the tides", "a bridge", "prime numbers", "a bakery", "the moon", "a river",
          "glaciers", "a violin", "the desert", "a lighthouse", "volcanoes", "a library")


def _rows(categories: tuple[str, str]) -> list[dict]:
    return [{"question_id": 81 + i, "category": categories[i % 2],
             "turns": [f"Write three paragraphs about {topic}.", "Now shorten it."]}
            for i, topic in enumerate(TOPICS)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _speed_parquet(path: Path) -> Path:
    rows = [{**r, "question_id": f"{r['question_id']:032x}", "sub_category": None,
             "source": "test", "src_id": str(i), "difficulty": None, "multiturn": False}
            for i, r in enumerate(_rows(("low_entropy", "high_entropy")))]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


SETS = {
    "mt-bench": (("writing", "coding"), lambda p: _jsonl(p / "question.jsonl",
                                                         _rows(("writing", "coding")))),
    "spec-bench": (("translation", "qa"), lambda p: _jsonl(p / "question.jsonl",
                                                           _rows(("translation", "qa")))),
    "speed-bench": (("low_entropy", "high_entropy"), lambda p: _speed_parquet(
        p / "test.parquet")),
}


@pytest.mark.parametrize("name", list(SETS))
def test_a_sets_categories_run_through_to_the_report(tmp_path: Path, name: str) -> None:
    categories, write = SETS[name]
    path = write(tmp_path)
    scenario = write_scenario(tmp_path, {
        "name": name, "ladder": [1, 4], "warmup_s": 1, "measure_s": 3, "min_requests": 6,
        "request": {"max_tokens": 24, "ignore_eos": True, "prompts": str(path),
                    "prompt_format": name},
        "arms": [{"name": "spec-on", "sim": {"profile": "seed-glm", "spec": "on"}},
                 {"name": "spec-off", "sim": {"profile": "seed-glm", "spec": "off"}}]})
    done = run_sweep(tmp_path, str(scenario), "--out", "out", timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    run = tmp_path / run_dir_of(done.stdout)
    for arm in ("spec-on", "spec-off"):
        rows = read_csv(run / arm / "locust_requests.csv")
        assert {r["category"] for r in rows} == set(categories)
        assert {int(r["prompt_index"]) for r in rows} <= set(range(len(TOPICS)))
    (pair,) = json.loads((run / "summary.json").read_text())["categories"]
    assert set(pair["c_star"]) == set(categories), pair
    assert "spec-on vs spec-off by prompt category" in done.stdout
