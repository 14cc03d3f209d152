"""The shape of an engine's answers, to compare a real engine with a simulator flavour.

A stream's chunks are sorted into kinds (`role`, `text`, `finish`, `usage`: the usage-only
chunk of `choices: []`), and each kind is reduced to its field paths
(`choices[].delta.content`, ...); /metrics is reduced to each series' label names. Two
engines speak alike when the kinds come in the same order with the same paths, and the
series specload reads carry the same labels. `shape_of` takes all of it from a live server
(one streamed chat request as specload's users send it, /metrics, /health,
/v1/models); `record` writes it as JSON (tests/data), so a flavour can be checked
against the real engine without it.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from specload import engines


def kind(chunk: dict[str, Any]) -> str:
    if not chunk["choices"]:
        return "usage"
    choice = chunk["choices"][0]
    if choice.get("finish_reason"):
        return "finish"
    return "role" if "role" in choice.get("delta", {}) else "text"


def paths(value: Any, prefix: str = "") -> set[str]:
    """The field paths of a JSON value: `choices[].delta.content`, ..."""
    if isinstance(value, dict):
        out = {prefix} if prefix else set()
        for key, inner in value.items():
            out |= paths(inner, f"{prefix}.{key}" if prefix else key)
        return out
    if isinstance(value, list):
        return {prefix} | set().union(*(paths(v, prefix + "[]") for v in value))
    return {prefix}


def stream_shape(chunks: list[Any]) -> dict[str, Any]:
    """The kinds in order (a run of text chunks as one) and each kind's field paths."""
    order: list[str] = []
    fields: dict[str, set[str]] = {}
    for chunk in chunks:
        k = kind(chunk)
        if not order or order[-1] != k:
            order.append(k)
        fields.setdefault(k, set()).update(paths(chunk))
    return {"order": order, "fields": {k: sorted(v) for k, v in fields.items()}}


def series_labels(metrics_text: str, names: set[str]) -> dict[str, list[str]]:
    """Each exposed sample name among `names` with its label names."""
    out: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name in names:
                out.setdefault(sample.name, set()).update(sample.labels)
    return {name: sorted(labels) for name, labels in out.items()}


def stream_differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What differs between two stream shapes: the order of kinds, and per kind the
    fields only one has (empty: they speak alike)."""
    out: dict[str, Any] = {} if a["order"] == b["order"] else {"order": (a["order"],
                                                                         b["order"])}
    for k in set(a["fields"]) | set(b["fields"]):
        only = set(a["fields"].get(k, [])) ^ set(b["fields"].get(k, []))
        if only:
            out[k] = sorted(only)
    return out


def labels_differences(a: dict[str, list[str]], b: dict[str, list[str]]
                       ) -> dict[str, tuple[list[str] | None, list[str] | None]]:
    """The series exposed by one only, or labelled differently (empty: alike)."""
    return {n: (a.get(n), b.get(n)) for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)}


def record(path: Path, shape: dict[str, Any]) -> None:
    path.write_text(json.dumps(shape, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def recorded(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


# a streamed chat request as specload's users send it, usage per chunk asked for
BODY = {"stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "max_tokens": 12, "temperature": 0, "seed": 1, "ignore_eos": True,
        "messages": [{"role": "user", "content": "Tell me about the sea, the sea."}]}


def read_names(engine: str) -> set[str]:
    """The series specload reads of an engine (histograms by their `_sum`, `_count`)."""
    entry = engines.get(engine)
    return {s.name for s in entry.series} | {
        f"{h}_{part}" for h in entry.histograms for part in ("sum", "count")}


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.status, reply.read()


def stream(base: str) -> list[Any]:
    model = json.loads(get(base + "/v1/models")[1])["data"][0]["id"]
    request = urllib.request.Request(base + "/v1/chat/completions",
                                     json.dumps({**BODY, "model": model}).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        events = [line[6:] for line in reply.read().decode().splitlines()
                  if line.startswith("data: ")]
    assert events[-1] == "[DONE]", events[-3:]
    return [json.loads(e) for e in events[:-1]]


def shape_of(base: str, engine: str) -> dict[str, Any]:
    """Everything compared about one server of `engine`."""
    status, health = get(base + "/health")
    return {"stream": stream_shape(stream(base)),
            "metrics": series_labels(get(base + "/metrics")[1].decode(), read_names(engine)),
            "health": [status, health.decode()],
            "models_fields": sorted(json.loads(get(base + "/v1/models")[1])["data"][0])}
