"""The /metrics sampler's CPU per sample: the kept lines only through the parser, and all.

The sampler parses an engine's /metrics once a second in the sweep's process, beside
the load on a shared host. This times `parse_metrics` (only the kept series' lines
reach prometheus_client's parser) against the reference way (every family parsed, then
the same combining), on a real vLLM CPU server's exposition under load
(`tests/data/vllm-cpu-metrics.txt`) or `--file`. Rounds alternate the two ways, so both
see the same machine; it prints each way's CPU per sample (median of the rounds) and
the median of the rounds' paired ratios.

    python scripts/bench_metrics_parse.py [--rounds 20] [--samples 50] [--file F]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from specload.runner.metrics_scrape import combine, parse_metrics

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "data" / "vllm-cpu-metrics.txt"


def reference(text: str) -> dict[str, float]:
    return combine(text_string_to_metric_families(text))


def cpu_per_sample(parse: Callable[[str], dict[str, float]], text: str, samples: int) -> float:
    start = time.process_time()
    for _ in range(samples):
        parse(text)
    return (time.process_time() - start) / samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--file", type=Path, default=DEFAULT)
    args = ap.parse_args()
    if args.rounds < 1 or args.samples < 1:
        ap.error("--rounds and --samples must be 1 or more")
    text = args.file.read_text()
    assert parse_metrics(text) == reference(text), "the two ways disagree"
    kept, full = [], []
    for _ in range(args.rounds):
        kept.append(cpu_per_sample(parse_metrics, text, args.samples))
        full.append(cpu_per_sample(reference, text, args.samples))
    print(f"# bench_metrics_parse: {args.rounds} rounds each way of {args.samples} samples "
          f"of {args.file.name} ({len(text.splitlines())} lines)")
    print(f"kept lines only: {1e3 * statistics.median(kept):.2f} ms CPU per sample")
    print(f"every family: {1e3 * statistics.median(full):.2f} ms CPU per sample")
    print(f"ratio (median of the rounds' pairs): "
          f"{statistics.median(f / k for f, k in zip(full, kept, strict=True)):.1f}x")


if __name__ == "__main__":
    main()
