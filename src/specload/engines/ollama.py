"""Ollama: its registry entry (no /metrics, no load switch, one event per token)."""

from __future__ import annotations

import re

from specload.engines.entry import Engine

ENGINE = Engine(
    # no load switch (issue #5800, PR #15980); no /metrics
    "ollama", "Ollama", re.compile(r"\bollama\b"), sim_flavors=("ollama",),
    per_token_events=True,  # server/routes.go: one response per token
)
