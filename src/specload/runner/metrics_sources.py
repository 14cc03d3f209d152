"""Where an arm's engine series are read: its replicas' /metrics, or a Prometheus server.

An arm behind a router has one exposition per replica (`metrics_url:` a list): each is
fetched, its kept series labelled with the replica's position (`specload_replica`), and
all are combined as one engine's ranks are (`metrics_scrape.combine`): counters and
queue sizes add up, ratio gauges are averaged weighted by their replica's running
requests, so a summed counter gives the arm's rates. Or the arm names a Prometheus
server and a label selector (`prometheus:`): each read asks its HTTP API for the kept
series matching the selector over the last minute and takes each series' latest sample,
stamped with the mean of their scrape times; a read that finds no newer sample than the
last writes nothing. The engine's API key goes only to the engine's own URLs, never to
a Prometheus server.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from specload.config.api_key import bearer
from specload.runner.metrics_scrape import combine, kept, kept_lines

REPLICA_LABEL = "specload_replica"
LOOKBACK = "1m"


class Reading(Protocol):
    """One read of an arm's series: combined values and when the server held them."""

    what: str  # shown in the note when nothing could be read

    def read(self) -> tuple[dict[str, float], float, float] | None:
        """(values, ts, seconds the read took), or None when nothing new was read."""


def _get(url: str, timeout_s: float, headers: dict[str, str],
         tls: ssl.SSLContext | None) -> str:
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout_s, context=tls) as resp:
        return resp.read().decode("utf-8", errors="replace")


class Expositions:
    """One or several /metrics URLs of one arm (its replicas)."""

    def __init__(self, urls: Sequence[str], timeout_s: float, api_key: str | None,
                 tls: ssl.SSLContext | None) -> None:
        self.urls, self.timeout_s, self.tls = list(urls), timeout_s, tls
        self.headers = bearer(api_key)
        self.what = ", ".join(self.urls)

    def read(self) -> tuple[dict[str, float], float, float]:
        table, parts = kept()
        wanted = frozenset(table) | parts
        before = time.time()
        texts = [_get(u, self.timeout_s, self.headers, self.tls) for u in self.urls]
        after = time.time()
        families: list[Metric] = []
        for i, text in enumerate(texts):
            for family in text_string_to_metric_families(kept_lines(text, wanted)):
                if len(texts) > 1:
                    family.samples = [s._replace(labels={**s.labels, REPLICA_LABEL: str(i)})
                                      for s in family.samples]
                families.append(family)
        return combine(families, table, parts), (before + after) / 2, after - before


class PrometheusQuery:
    """An engine's series as a Prometheus server holds them, by a label selector."""

    def __init__(self, url: str, selector: str, timeout_s: float,
                 tls: ssl.SSLContext | None) -> None:
        self.base, self.timeout_s, self.tls = url.rstrip("/"), timeout_s, tls
        self.selector = selector.strip().removeprefix("{").removesuffix("}").strip()
        self.what = f"{self.base} ({{{self.selector}}})"
        self._last_ts = 0.0

    def query(self) -> str:
        table, parts = kept()
        names = sorted(set(table) | parts | {n.removesuffix("_total") for n in table})
        matchers = [f'__name__=~"{"|".join(names)}"'] + ([self.selector] if self.selector
                                                         else [])
        return "{" + ",".join(matchers) + "}[" + LOOKBACK + "]"

    def read(self) -> tuple[dict[str, float], float, float] | None:
        before = time.time()
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": self.query()})
        answer = json.loads(_get(url, self.timeout_s, {}, self.tls))
        took = time.time() - before
        if answer.get("status") != "success":
            raise ValueError(f"Prometheus: {answer.get('error', 'no answer')}")
        families, ts = from_matrix(answer["data"]["result"])
        if not families or ts <= self._last_ts:
            return None
        self._last_ts = ts
        return combine(families), ts, took


def from_matrix(result: list[dict]) -> tuple[list[Metric], float]:
    """A range query's series as families of their latest samples (names as the kept
    table spells them: a counter stored without `_total` gets it), and the mean time of
    those samples."""
    table, _ = kept()
    families: dict[str, Metric] = {}
    times: list[float] = []
    for series in result:
        labels = dict(series["metric"])
        name = labels.pop("__name__", "")
        if name not in table and f"{name}_total" in table:
            name = f"{name}_total"
        if not series.get("values"):
            continue
        t, value = series["values"][-1]
        times.append(float(t))
        family = families.setdefault(name, Metric(name, "", "untyped"))
        family.samples.append(Sample(name, labels, float(value)))
    return list(families.values()), (sum(times) / len(times) if times else 0.0)
