"""Regenerate the built-in prompt set `src/specload/data/prompts.jsonl`.

Deterministic (fixed seed): nine categories, 45 prompts each, short one-liners to
long retrieved contexts, some with a system message or earlier turns: chat, code,
summarisation, reasoning, extraction, then long-context retrieval (rag: several
retrieved documents and a question one of them answers), multi-turn chat (multi_turn:
three to six earlier exchanges, then a follow-up that needs them), translation, and
structured output (json: a schema to fill from a description). Speculative acceptance
differs by category (code, extraction and retrieval repeat their input, chat and
translation do not), which is why each prompt carries one. The categories are made in
this order from one random stream, so adding one at the end leaves the others as they
were. Run: python scripts/gen_prompts.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/specload/data/prompts.jsonl"
PER_CATEGORY = 45

CHAT_TOPICS = [
    "learning to play the guitar as an adult", "keeping houseplants alive in winter",
    "planning a week-long hiking trip", "making sourdough bread at home",
    "preparing for a job interview", "reducing screen time", "training a puppy",
    "starting to run after a long break", "choosing a first telescope",
    "learning a second language", "organising a small home office",
    "cooking for a large family gathering", "saving money on groceries",
    "writing a wedding toast", "sleeping better", "moving to a new city",
    "picking a laptop for university", "getting into birdwatching",
    "hosting a board game night", "keeping a journal",
]
CHAT_TEMPLATES = [
    "Any tips for {t}?",
    "I'm thinking about {t}. Where should I start?",
    "What are the most common mistakes people make when {t}?",
    "Can you give me a simple plan for {t} over the next month?",
    "My friend says {t} is a waste of time. What would you tell them?",
    "Explain to a ten-year-old why someone might enjoy {t}.",
]
CODE_TASKS = [
    "returns the n-th Fibonacci number iteratively",
    "checks whether a string is a palindrome, ignoring punctuation and case",
    "merges two sorted lists into one sorted list",
    "parses an ISO 8601 date string and returns the weekday",
    "computes the moving average of a list with a given window",
    "flattens an arbitrarily nested list",
    "counts word frequencies in a text file and prints the top ten",
    "validates an IPv4 address",
    "implements binary search on a sorted array",
    "converts a Roman numeral to an integer",
    "deduplicates a list while keeping the original order",
    "reads a CSV file and returns the sum of one column",
    "implements an LRU cache with a fixed capacity",
    "finds all anagrams of a word in a list of words",
    "rotates a square matrix by 90 degrees in place",
]
LANGS = ["Python", "TypeScript", "Go", "Rust", "Java"]
SNIPPETS = [
    "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
    "    return total / len(xs)\n",
    "function last(arr) {\n  return arr[arr.length];\n}\n",
    "def read_config(path):\n    f = open(path)\n    data = f.read()\n"
    "    return json.loads(data)\n",
    "for i in range(len(items)):\n    if items[i] == target:\n        del items[i]\n",
    "SELECT name, COUNT(*) FROM orders JOIN users ON users.id = orders.user_id;\n",
    "func sum(xs []int) int {\n\tvar s int\n\tfor i := 0; i <= len(xs); i++ {\n"
    "\t\ts += xs[i]\n\t}\n\treturn s\n}\n",
]
REVIEW_ASKS = [
    "Find the bug in this code, explain it, and give a corrected version:",
    "Review this code as a senior engineer would: list every problem you see.",
    "Write unit tests that expose the defect in this code, then fix it:",
]
SUBJECTS = ["the city council", "the research team", "the company", "the school board",
            "the hospital", "the football club", "the library", "the startup"]
VERBS = ["announced", "reviewed", "postponed", "approved", "questioned", "expanded",
         "cancelled", "funded", "evaluated", "redesigned"]
OBJECTS = ["a new recycling programme", "the budget for next year", "the opening hours",
           "a pilot study on remote work", "plans for a second building",
           "its partnership with a local university", "the public transport subsidy",
           "a training course for volunteers", "the data retention policy",
           "an exhibition on regional history"]
REASONS = ["after months of public consultation", "because costs had risen sharply",
           "following complaints from residents", "to meet new national rules",
           "after a successful trial period", "despite objections from two members",
           "in response to a drop in visitors", "as part of a five-year strategy"]
NAMES = ["Amara Okafor", "Lukas Weber", "Sofia Marquez", "Kenji Watanabe", "Priya Nair",
         "Olivia Brown", "Mateo Rossi", "Hana Kim", "Ahmed Hassan", "Elena Petrova"]
CITIES = ["Lisbon", "Nairobi", "Osaka", "Toronto", "Krakow", "Lyon", "Austin", "Pune"]
ITEMS = ["laptop stand", "office chairs", "printer toner", "conference tickets",
         "cloud storage", "catering", "train tickets", "software licences"]


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(REASONS)}.")


def _passage(rng: random.Random, sentences: int) -> str:
    paras, cur = [], []
    for _ in range(sentences):
        cur.append(_sentence(rng))
        if len(cur) >= rng.randint(3, 6):
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return "\n\n".join(paras)


def chat(rng: random.Random, i: int) -> dict:
    topic = CHAT_TOPICS[i % len(CHAT_TOPICS)]
    text = CHAT_TEMPLATES[(i * 7) % len(CHAT_TEMPLATES)].format(t=topic)
    if i % 3 == 0:
        return {"messages": [
            {"role": "system", "content": "You are a friendly, practical assistant."},
            {"role": "user", "content": f"Hi! I have a question about {topic}."},
            {"role": "assistant", "content": "Of course, happy to help. What would you like "
             "to know?"},
            {"role": "user", "content": text},
        ]}
    return {"prompt": text}


def code(rng: random.Random, i: int) -> dict:
    lang = LANGS[(i + i // len(CODE_TASKS)) % len(LANGS)]
    if i % 3 == 2:
        k = i // 3
        snippet = SNIPPETS[k % len(SNIPPETS)]
        ask = REVIEW_ASKS[k // len(SNIPPETS) % len(REVIEW_ASKS)]
        return {"prompt": f"{ask}\n\n```\n{snippet}```"}
    task = CODE_TASKS[i % len(CODE_TASKS)]
    extra = " Include type hints, a docstring and three unit tests." if i % 2 else ""
    return {"prompt": f"Write a {lang} function that {task}.{extra}"}


def summarisation(rng: random.Random, i: int) -> dict:
    n = rng.choice([3, 5, 8, 12, 18, 25, 35])
    style = rng.choice(["in two sentences", "as three bullet points", "in one paragraph",
                        "for a busy executive", "in plain language for a teenager"])
    return {"prompt": f"Summarise the following news digest {style}.\n\n{_passage(rng, n)}"}


def reasoning(rng: random.Random, i: int) -> dict:
    a, b, c = rng.randint(3, 40), rng.randint(2, 12), rng.randint(5, 90)
    kinds = [
        f"A train leaves at 09:{a:02d} and travels {c * 3} km at {c + 40} km/h. "
        f"When does it arrive? Show your reasoning step by step.",
        f"A shop sells pens in packs of {b} for {a} euros and single pens for "
        f"{a // b + 1} euros each. What is the cheapest way to buy {c} pens? Explain.",
        f"{NAMES[i % len(NAMES)]} is twice as old as their sister was {b} years ago. "
        f"Together they are {c + 30} years old. How old is each? Think it through.",
        f"There are {a + c} people in a room and each shakes hands with every other "
        f"person once. How many handshakes happen? Then generalise to n people.",
        f"Is {a * b + c} a prime number? Reason carefully and show the divisions you try.",
        f"Three boxes are labelled apples, oranges and mixed, and every label is wrong. "
        f"You may draw one fruit from one box. How do you relabel all boxes? "
        f"Also explain what changes if there are {b + c} boxes.",
    ]
    return {"prompt": kinds[i % len(kinds)]}


def extraction(rng: random.Random, i: int) -> dict:
    rows = []
    for _ in range(rng.choice([2, 4, 6, 10, 15])):
        rows.append(
            f"On {rng.randint(1, 28)} {rng.choice(['March', 'June', 'October', 'January'])} "
            f"{rng.choice(NAMES)} from {rng.choice(CITIES)} paid "
            f"{rng.randint(20, 5000)}.{rng.randint(0, 99):02d} EUR for "
            f"{rng.choice(ITEMS)} (invoice {rng.randint(10000, 99999)})."
        )
    fmt = rng.choice(["a JSON array of objects with keys date, name, city, amount, item, "
                      "invoice", "a Markdown table", "CSV with a header row"])
    return {"prompt": "Extract every payment from the notes below as " + fmt + ".\n\n"
            + "\n".join(rows)}


DOC_TOPICS = ["warranty terms", "the travel expense policy", "the data retention policy",
              "on-call rotations", "the office relocation", "the customer refund process",
              "the security incident review", "the annual budget", "the hiring freeze",
              "the new recycling programme"]
QUESTIONS = [
    "Who {verb} {obj}, and why?",
    "According to the documents, what happened to {obj}? Quote the sentence you rely on.",
    "Which document mentions {obj}? Answer with its number and one sentence of context.",
    "Did anyone object to {obj}? Cite the document, or say the documents do not say.",
]


def rag(rng: random.Random, i: int) -> dict:
    docs, facts = [], []
    for k in range(rng.randint(4, 8)):
        topic = rng.choice(DOC_TOPICS)
        body = _passage(rng, rng.randint(5, 14))
        docs.append(f"[Document {k + 1}] Internal note on {topic}\n{body}")
        facts.append(body.split(". ")[0])
    fact = rng.choice(facts)  # the question asks about one document's first sentence
    verb = next(v for v in VERBS if f" {v} " in fact)
    obj = next(o for o in OBJECTS if o in fact)
    question = QUESTIONS[i % len(QUESTIONS)].format(verb=verb, obj=obj)
    return {"messages": [
        {"role": "system", "content": "Answer only from the retrieved documents below. "
         "If they do not contain the answer, say so."},
        {"role": "user", "content": "\n\n".join(docs) + f"\n\nQuestion: {question}"},
    ]}


TRIPS = ["Kyoto", "Lisbon", "the Scottish Highlands", "Patagonia", "Iceland", "Vietnam"]
ADVICE = [
    "Book the first night near the main station so the arrival is easy.",
    "Keep one day free in case the weather turns.",
    "A regional transport pass pays for itself after about three trips.",
    "Reserve the popular restaurants a week ahead, especially for a group.",
    "Start with the old town on foot, then take day trips further out.",
    "Pack layers: the mornings are cold even in summer.",
    "Split up for one afternoon so everyone gets their favourite activity.",
    "Travel insurance with cancellation cover is worth it for a group.",
    "Put the longest journey in the middle of the trip, not on the last day.",
    "Self-catering for a few evenings keeps the budget in check.",
]
FOLLOW_UPS = [
    "Thanks. Now fold all of that into a day-by-day plan, keeping what we agreed above.",
    "Going back to your second answer: what would you change if the budget were halved?",
    "Summarise everything we decided so far as a short checklist.",
    "You contradicted yourself earlier. Which of your two suggestions should I follow?",
]


def multi_turn(rng: random.Random, i: int) -> dict:
    place = TRIPS[i % len(TRIPS)]
    days, people = rng.randint(3, 14), rng.randint(1, 6)
    asks = [f"I'm planning {days} days in {place} for {people} people. Where do we start?",
            f"We care most about {rng.choice(['food', 'hiking', 'museums', 'quiet'])}. "
            "Does that change your advice?",
            f"Our budget is about {rng.randint(8, 60) * 100} euros in total. Is that enough?",
            "One of us cannot walk long distances. What should we swap out?",
            f"We land at {rng.randint(6, 23)}:00 on the first day. How do we get in?"]
    messages = [{"role": "system", "content": "You are a careful travel planner."}]
    for ask in asks[:rng.randint(3, 5)]:
        messages.append({"role": "user", "content": ask})
        reply = rng.sample(ADVICE, rng.randint(2, 4))
        messages.append({"role": "assistant", "content": f"For {place}: " + " ".join(reply)})
    messages.append({"role": "user", "content": FOLLOW_UPS[i % len(FOLLOW_UPS)]})
    return {"messages": messages}


TARGETS = ["French", "German", "Spanish", "Japanese", "Portuguese", "Polish", "Hindi"]


def translation(rng: random.Random, i: int) -> dict:
    target = TARGETS[i % len(TARGETS)]
    if i % 3 == 0:
        name, city = rng.choice(NAMES), rng.choice(CITIES)
        text = (f"Dear {name},\n\nThank you for your visit to our office in {city}. "
                + _passage(rng, rng.randint(2, 5)) + "\n\nKind regards,\nThe team")
    else:
        text = _passage(rng, rng.randint(1, 9))
    return {"prompt": f"Translate the following into {target}. Keep names, numbers and "
            f"the paragraph breaks as they are.\n\n{text}"}


SCHEMAS = [
    ("an event", '{"title": str, "date": "YYYY-MM-DD", "city": str, "attendees": int, '
     '"topics": [str]}'),
    ("a purchase", '{"buyer": str, "item": str, "amount_eur": float, "paid": bool, '
     '"invoice": str}'),
    ("a person", '{"name": str, "city": str, "role": str, "languages": [str], '
     '"manager": str | null}'),
]


def json_output(rng: random.Random, i: int) -> dict:
    what, schema = SCHEMAS[i % len(SCHEMAS)]
    name, city, item = rng.choice(NAMES), rng.choice(CITIES), rng.choice(ITEMS)
    facts = (f"{name} from {city} bought {item} for {rng.randint(20, 5000)} euros on "
             f"{rng.randint(1, 28)} June; {_sentence(rng)} {_sentence(rng)}")
    many = " Return a JSON array with one object per item mentioned." if i % 4 == 3 else ""
    return {"messages": [
        {"role": "system", "content": "Reply with JSON only: no prose, no code fences."},
        {"role": "user", "content": f"Describe {what} from the text as JSON matching this "
         f"schema: {schema}.{many}\n\nText: {facts}"},
    ]}


def main(argv: list[str] | None = None) -> None:
    out = _out(argv)
    rng = random.Random(20261130)
    makers = {"chat": chat, "code": code, "summarisation": summarisation,
              "reasoning": reasoning, "extraction": extraction, "rag": rag,
              "multi_turn": multi_turn, "translation": translation, "json": json_output}
    lines: list[str] = []
    for category, make in makers.items():
        seen: set[str] = set()
        i = 0
        while len(seen) < PER_CATEGORY:
            item = make(rng, i)
            item["category"] = category
            line = json.dumps(item, ensure_ascii=False)
            if line not in seen:
                seen.add(line)
                lines.append(line)
            i += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} prompts to {out}")


def _out(argv: list[str] | None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"file to write (default: {OUT})")
    return parser.parse_args(argv).out


if __name__ == "__main__":
    main()
