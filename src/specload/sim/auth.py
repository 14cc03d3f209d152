"""The API key as each engine checks it: which routes need it and how it may be sent.

With `specload sim --api-key KEY` (or `--api-key-env NAME`) a request to a guarded
route needs the key, else it gets the engine's 401. The rule is flavour data
(`flavors.ApiKeyRule`, sources there): vLLM guards paths under `/v1` and takes only
`Authorization: Bearer KEY` (the scheme in any case); llama.cpp guards every path but
`/health`, `/v1/health` and its web UI, `/metrics` included, strips a leading
`Bearer ` if there is one (so a bare key passes too) and reads `X-Api-Key` when no
`Authorization` header came. Both let `OPTIONS` through (CORS preflight). The key is
compared in constant time and never logged or traced.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from specload.sim.flavors import ApiKeyRule

BEARER = "Bearer "


def needs_key(rule: ApiKeyRule, method: str, path: str) -> bool:
    """Whether a request to `path` must carry the key."""
    return (method != "OPTIONS" and path.startswith(rule.guarded_prefix)
            and path not in rule.public)


def presented(rule: ApiKeyRule, headers: Mapping[str, str]) -> str | None:
    """The key a request carries, read as the engine reads it (None: none it accepts)."""
    value = headers.get("Authorization", "")
    if rule.bearer_required:  # vLLM: `scheme, _, param = value.partition(" ")`
        scheme, _, param = value.partition(" ")
        return param if scheme.lower() == "bearer" else None
    if not value and rule.x_api_key:
        value = headers.get("X-Api-Key", "")
    return value.removeprefix(BEARER)


def authorized(rule: ApiKeyRule, key: str, headers: Mapping[str, str]) -> bool:
    """Whether the request's key is `key`."""
    got = presented(rule, headers)
    return got is not None and hmac.compare_digest(got.encode(), key.encode())
