"""The speculative settings an arm's start command gives its server: method, draft model, k.

The recommended engine settings keep the method and draft model the spec-on arm was
measured with, so they are read from its `command.start` string. The command is split
like a shell would (`shlex`), so quoted JSON and a YAML folded scalar's spaces are
handled; words are read as vLLM flags (`--speculative-config '{...}'`, also
`--speculative-config=...`, and the old `--speculative-model` /
`--num-speculative-tokens`), SGLang flags (`--speculative-algorithm`,
`--speculative-draft-model-path`, `--speculative-num-steps`) or llama.cpp flags
(`--spec-draft-model`/`-md`, `--spec-draft-n-max`, the removed `--draft-max`).
Methods are named as vLLM names them. A value that does not parse is reported, never
guessed. Pure: no file is read.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# SGLang --speculative-algorithm -> vLLM speculative_config.method.
_SGLANG_METHODS = {"EAGLE": "eagle", "EAGLE3": "eagle3", "NEXTN": "mtp", "MTP": "mtp",
                   "STANDALONE": "draft_model", "NGRAM": "ngram"}
_VLLM_CONFIG_FLAGS = ("--speculative-config", "--speculative_config")
_FLAGS = {
    "model": ("--speculative-model", "--speculative_model", "--speculative-draft-model-path",
              "--speculative-draft-model", "--spec-draft-model", "--model-draft", "-md"),
    "k": ("--num-speculative-tokens", "--num_speculative_tokens", "--speculative-num-steps",
          "--spec-draft-n-max", "--draft-max", "--draft-n", "--draft"),
    "algorithm": ("--speculative-algorithm",),
}
# Without balanced quotes shlex gives up; this still finds `--speculative-config '{...}'`.
_CONFIG_FALLBACK = re.compile(r"--speculative[-_]config[=\s]+'([^']*)'")


@dataclass(frozen=True, slots=True)
class SpecSettings:
    """What a command says about speculation; None where it says nothing."""

    method: str | None = None
    model: str | None = None
    k: int | None = None
    config: dict[str, Any] = field(default_factory=dict)  # vLLM's whole speculative_config
    problems: tuple[str, ...] = ()

    def with_k(self, k: int | None) -> SpecSettings:
        """The same settings with k filled in where the command had none."""
        if k is None or self.k is not None:
            return self
        return SpecSettings(self.method, self.model, k, self.config, self.problems)


def _words(command: str) -> tuple[list[str], str | None]:
    try:
        return shlex.split(command), None
    except ValueError as exc:
        return command.split(), f"the command does not split like a shell line ({exc})"


def _flag_values(words: list[str]) -> Iterator[tuple[str, str]]:
    """(flag, value) for `--flag value` and `--flag=value`."""
    for i, word in enumerate(words):
        if not word.startswith("-"):
            continue
        name, eq, value = word.partition("=")
        if eq:
            yield name, value
        elif i + 1 < len(words):
            yield name, words[i + 1]


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_command(command: str | None) -> SpecSettings:
    """The speculative settings in a server start command (all None if it has none)."""
    if not command:
        return SpecSettings()
    words, problem = _words(command)
    problems = [problem] if problem else []
    found: dict[str, str] = {}
    config_text: str | None = None
    for flag, value in _flag_values(words):
        if flag in _VLLM_CONFIG_FLAGS:
            config_text = value
        for key, names in _FLAGS.items():
            if flag in names:
                found.setdefault(key, value)
    if problem:  # the words are only split at spaces: take the quoted JSON as it stands
        match = _CONFIG_FALLBACK.search(command)
        config_text = match.group(1) if match else None
    config: dict[str, Any] = {}
    if config_text is not None:
        try:
            loaded = json.loads(config_text)
        except json.JSONDecodeError as exc:
            problems.append(f"--speculative-config is not JSON ({exc.msg} at {exc.pos})")
        else:
            if isinstance(loaded, dict):
                config = loaded
            else:
                problems.append("--speculative-config is not a JSON object")
    algorithm = found.get("algorithm", "")
    method = config.get("method") or _SGLANG_METHODS.get(algorithm.upper()) or None
    model = config.get("model") or found.get("model")
    k = _int(config.get("num_speculative_tokens")) or _int(found.get("k"))
    return SpecSettings(str(method) if method else None, str(model) if model else None, k,
                        config, tuple(problems))
