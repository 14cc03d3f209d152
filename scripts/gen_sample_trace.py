"""Write `scenarios/traces/conversation-sample.jsonl`: a small Mooncake-format trace of
chat sessions, for `scenarios/trace-replay.yaml` and the docs.

Mooncake's own conversation trace (kvcache-ai/Mooncake FAST25-release/traces/) is what it
imitates, at a scale the simulator replays in minutes: sessions start as a Poisson
process; each turn's prompt is the session's history (its earlier prompts and replies)
plus a new message, so its hash ids repeat the previous turn's full 512-token blocks
and add its own; a reader thinks between a reply and the next turn. Timestamps are in
milliseconds from the first arrival, as Mooncake's are. Seeded: the file is the same on
every run.

    python scripts/gen_sample_trace.py [--out PATH] [--sessions N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

BLOCK = 512
OUT = Path(__file__).resolve().parent.parent / "scenarios" / "traces" / \
    "conversation-sample.jsonl"


def sessions(n: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows: list[tuple[float, int, int, list[int]]] = []
    start, next_id = 0.0, 0
    for _ in range(n):
        start += rng.expovariate(1.0)  # a new session every second on average
        t, history, ids = start, 0, []
        for _turn in range(rng.randint(2, 6)):
            prompt = history + rng.randint(60, 400)
            full = history // BLOCK  # the blocks the history fills are shared
            ids = ids[:full] + list(range(next_id, next_id + math.ceil(prompt / BLOCK) - full))
            next_id += math.ceil(prompt / BLOCK) - full
            reply = min(300, max(16, round(rng.lognormvariate(math.log(90), 0.5))))
            rows.append((t, prompt, reply, list(ids)))
            history = prompt + reply
            t += reply * 0.03 + rng.expovariate(1 / 15.0)  # the reply, then reading
    rows.sort(key=lambda r: r[0])
    first = rows[0][0]
    return [{"timestamp": round((t - first) * 1e3), "input_length": n_in,
             "output_length": n_out, "hash_ids": ids} for t, n_in, n_out, ids in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--sessions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    lines = sessions(args.sessions, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{args.out}: {len(lines)} requests over {lines[-1]['timestamp'] / 1e3:.0f} s")


if __name__ == "__main__":
    main()
