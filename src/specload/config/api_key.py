"""The API key: one resolution for every request specload sends to a server.

A scenario (`request.api_key_env`) or the users' `--api-key-env` names the environment
variable that holds the key; with no name, `OPENAI_API_KEY` is used when it is set, as
the OpenAI clients do. The users' requests, the runner's readiness and liveness probes,
its `/v1/models` check and its `/metrics` sampling all take the key from `resolve` and
send it as `bearer`, so no request goes out without it. The key itself lives in memory
only: the scenario holds a variable's name, never a key, and no file the tool writes
carries the value.
"""

from __future__ import annotations

import os

DEFAULT_ENV = "OPENAI_API_KEY"


def resolve(named: str | None) -> str | None:
    """The key from the variable `named` (else `DEFAULT_ENV`); None when unset or empty."""
    return os.environ.get(named or DEFAULT_ENV) or None


def bearer(key: str | None) -> dict[str, str]:
    """The header that carries the key ({} without one)."""
    return {"Authorization": f"Bearer {key}"} if key else {}
