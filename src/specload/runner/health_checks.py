"""Asking a server whether it is up, without misjudging or disturbing a busy one.

Readiness tries the arm's `ready_url` if it has one, else `/health` and then
`/v1/models` (llama-cpp-python's server has no /health; SGLang's runs a generation),
and says what it got from each: refused, an HTTP status, a TLS error, a timeout.
Liveness during a run (`Liveness`) probes only after the load generator has seen no
chunk for a while, with a generous timeout, in a background thread: a server whose
streams progress is alive whatever its health route does (llama-cpp-python's
/v1/models waits behind the running generation, and its waiting request would cut that
stream short). A server is declared dead only when its connections are refused, or
after a long silence with failed probes.
"""

from __future__ import annotations

import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from specload.config.api_key import bearer

READY_PATHS = ("/health", "/v1/models")
# A silent server is probed after a sixth of the silence that stalls it, with a probe
# timeout as long (30 s each at the default 180 s)
PROBES_PER_STALL = 6
SILENT = "no token for"  # how a stalled server's reason begins


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One GET: did it answer 2xx, and if not what happened (one short phrase)."""

    url: str
    ok: bool
    detail: str
    refused: bool = False
    body: bytes = b""


def tls_context(ca_bundle: str | None, insecure: bool) -> ssl.SSLContext:
    """The client TLS settings the load generator uses, for the runner's own requests."""
    if insecure:
        return ssl._create_unverified_context()
    return ssl.create_default_context(cafile=ca_bundle)


def probe(url: str, timeout: float, api_key: str | None = None,
          context: ssl.SSLContext | None = None) -> ProbeResult:
    """GET `url` once."""
    req = urllib.request.Request(url)
    for name, value in bearer(api_key).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
            return ProbeResult(url, 200 <= resp.status < 300, f"HTTP {resp.status}",
                               body=resp.read(1 << 20))
    except urllib.error.HTTPError as exc:
        return ProbeResult(url, False, f"HTTP {exc.code}")
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ssl.SSLError):
            return ProbeResult(url, False, f"TLS error: {getattr(reason, 'reason', reason)}")
        if isinstance(reason, ConnectionRefusedError):
            return ProbeResult(url, False, "connection refused", refused=True)
        if isinstance(reason, TimeoutError):
            return ProbeResult(url, False, f"no answer within {timeout:.3g} s")
        return ProbeResult(url, False, str(reason))
    except ssl.SSLError as exc:
        return ProbeResult(url, False, f"TLS error: {getattr(exc, 'reason', exc)}")
    except (TimeoutError, OSError) as exc:
        if isinstance(exc, TimeoutError):
            return ProbeResult(url, False, f"no answer within {timeout:.3g} s")
        return ProbeResult(url, False, type(exc).__name__)


def readiness(base_url: str, ready_url: str | None, timeout: float, api_key: str | None,
              context: ssl.SSLContext | None) -> list[ProbeResult]:
    """Probe the ready URL, or /health then /v1/models; the last result is the verdict."""
    urls = [ready_url] if ready_url else [base_url + p for p in READY_PATHS]
    results = []
    for url in urls:
        result = probe(url, timeout, api_key, context)
        results.append(result)
        if result.ok or result.refused:
            break
    return results


def describe(results: list[ProbeResult]) -> str:
    """`/health: HTTP 404, /v1/models: connection refused`."""
    return ", ".join(f"{r.url}: {r.detail}" for r in results)


def listed_models(body: bytes) -> list[str]:
    """Model ids in a `/v1/models` answer (empty if it is not one)."""
    try:
        data = orjson.loads(body).get("data")
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [str(m["id"]) for m in data or [] if isinstance(m, dict) and m.get("id")]


class Liveness:
    """Judges a server alive from the chunks it streams, probing only after silence.

    `check(last_chunk_at)` is called often; it never blocks: a probe runs in a thread
    and its answer is used at a later call. Returns why the server is dead, or None.
    """

    def __init__(self, url: str, probe_once: Callable[[str, float], ProbeResult],
                 stall_after_s: float = 180.0, clock: Callable[[], float] = time.time
                 ) -> None:
        self.url = url
        self._probe = probe_once
        self.stall_after_s = stall_after_s
        self.probe_after_s = stall_after_s / PROBES_PER_STALL
        self._clock = clock
        self._since = clock()
        self._thread: threading.Thread | None = None
        self._result: ProbeResult | None = None

    @property
    def silent_since(self) -> float:
        """When the server's current silence began (its last chunk, or the start)."""
        return self._since

    def check(self, last_chunk_at: float | None) -> str | None:
        now = self._clock()
        if last_chunk_at is not None and last_chunk_at > self._since:
            self._since, self._result = last_chunk_at, None
        silence = now - self._since
        if silence < self.probe_after_s:
            return None
        result = self._result
        if result is not None and result.ok:
            self._since, self._result = now, None  # answered: alive, just quiet
            return None
        if result is not None and result.refused:
            return f"{result.url}: {result.detail}"
        if silence >= self.stall_after_s and result is not None:
            return f"{SILENT} {silence:.0f} s and {result.url} answered: {result.detail}"
        if self._thread is None or not self._thread.is_alive():
            self._result = None
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return None

    def _run(self) -> None:
        self._result = self._probe(self.url, self.probe_after_s)
