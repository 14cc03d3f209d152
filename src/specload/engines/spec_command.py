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
guessed. Shell variables in the values read (`"model": "'"$VLLM_MODEL"'/draft"`) are
filled from the environment the caller passes, as the shell that ran the command filled
them, so the recommended files and the verification arm's start line (where the JSON
sits inside single quotes, out of the shell's reach) name the real path; one the
environment lacks is kept as written and reported. Pure: no file is read.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# SGLang --speculative-algorithm -> vLLM speculative_config.method (SGLang's builtins:
# python/sglang/srt/arg_groups/fields/spec.py; vLLM's names: vllm/config/speculative.py
# SpeculativeMethod, `dflash` and `dspark` among them).
_SGLANG_METHODS = {"EAGLE": "eagle", "EAGLE3": "eagle3", "NEXTN": "mtp", "MTP": "mtp",
                   "STANDALONE": "draft_model", "NGRAM": "ngram", "DFLASH": "dflash",
                   "DSPARK": "dspark"}
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
_SHELL_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


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


def _expand(value: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`value` with `$NAME` and `${NAME}` filled from env; names env lacks go to missing."""
    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in env:
            return env[name]
        missing.append(name)
        return match.group(0)
    return _SHELL_VARIABLE.sub(fill, value)


def parse_command(command: str | None, env: Mapping[str, str] | None = None) -> SpecSettings:
    """The speculative settings in a server start command (all None if it has none);
    shell variables in them are filled from `env` (none by default)."""
    if not command:
        return SpecSettings()
    words, problem = _words(command)
    problems = [problem] if problem else []
    found: dict[str, str] = {}
    config_text: str | None = None
    missing: list[str] = []
    for flag, value in _flag_values(words):
        if flag in _VLLM_CONFIG_FLAGS:
            config_text = _expand(value, env or {}, missing)
        for key, names in _FLAGS.items():
            if flag in names and key not in found:
                found[key] = _expand(value, env or {}, missing)
    if problem:  # the words are only split at spaces: take the quoted JSON as it stands
        match = _CONFIG_FALLBACK.search(command)
        config_text = _expand(match.group(1), env or {}, missing) if match else None
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
    problems += [f"${name} is not set here: the settings keep it as written"
                 for name in dict.fromkeys(missing)]
    algorithm = found.get("algorithm", "")
    method = config.get("method") or _SGLANG_METHODS.get(algorithm.upper()) or None
    model = config.get("model") or found.get("model")
    k = _int(config.get("num_speculative_tokens")) or _int(found.get("k"))
    return SpecSettings(str(method) if method else None, str(model) if model else None, k,
                        config, tuple(problems))
