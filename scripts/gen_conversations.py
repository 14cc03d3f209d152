"""Regenerate the built-in multi-turn set `src/specload/data/conversations.jsonl`.

Deterministic (fixed seed): 40 conversations in each of the five prompt categories of
`gen_prompts.py`, each opening with one of its prompts and going on with 2-7 follow-up
questions of the kind people ask about a reply ("now add error handling", "shorten it
to one sentence"). Only the human turns are written, in the ShareGPT entry shape (one
entry per line, with its category): in a session the server writes every reply.
Run: python scripts/gen_conversations.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from gen_prompts import chat, code, extraction, reasoning, summarisation

OUT = Path(__file__).resolve().parents[1] / "src/specload/data/conversations.jsonl"
PER_CATEGORY = 40
SYSTEM = "You are a friendly, practical assistant. Keep answers focused."

FOLLOW_UPS = {
    "chat": ["Thanks! Can you say more about the second point?",
             "How long would that usually take?", "What would you do first, in my place?",
             "Is there anything I should avoid?", "Can you put that into a short checklist?",
             "What if I only have half an hour a day?", "Which of these matters most?",
             "Could you give me an example from everyday life?"],
    "code": ["Now add error handling for bad input.", "Can you make it faster? Explain why.",
             "Write the tests in pytest style.", "Add type hints and a docstring.",
             "How would this change for very large inputs?",
             "Rewrite it without any standard library helpers.",
             "What is its time and memory complexity?", "Show how to call it from a script."],
    "summarisation": ["Now shorten it to one sentence.", "What is the most important fact?",
                      "Which part would a local resident care about most?",
                      "Write a headline for it.", "List the organisations mentioned.",
                      "Rewrite the summary in a neutral, formal tone.",
                      "What questions does the digest leave open?"],
    "reasoning": ["Check your answer a different way.", "What if all the numbers doubled?",
                  "Where could someone go wrong with this?",
                  "Explain it again in three short steps.",
                  "Can you write it as a general formula?",
                  "Make up a similar problem and solve it."],
    "extraction": ["Now sort them by amount.", "Which city paid the most in total?",
                   "Add a column with the amount in US dollars at 1.08.",
                   "Which names appear more than once?",
                   "Give only the invoices above 1000 EUR.",
                   "Output the same data as YAML.", "What is the average payment?"],
}
MAKERS = {"chat": chat, "code": code, "summarisation": summarisation,
          "reasoning": reasoning, "extraction": extraction}


def opening(item: dict) -> str:
    if "prompt" in item:
        return item["prompt"]
    return [m for m in item["messages"] if m["role"] == "user"][-1]["content"]


def conversation(rng: random.Random, category: str, i: int) -> dict:
    turns = [opening(MAKERS[category](rng, i))]
    turns += rng.sample(FOLLOW_UPS[category], rng.randint(2, 6))
    entry: dict = {"category": category, "conversations": []}
    if i % 4 == 0:
        entry["conversations"].append({"from": "system", "value": SYSTEM})
    entry["conversations"] += [{"from": "human", "value": t} for t in turns]
    return entry


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"file to write (default: {OUT})")
    out = parser.parse_args(argv).out
    rng = random.Random(20261207)
    lines = [json.dumps(conversation(rng, category, i), ensure_ascii=False)
             for category in MAKERS for i in range(PER_CATEGORY)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} conversations to {out}")


if __name__ == "__main__":
    main()
