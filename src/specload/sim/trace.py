"""The ground-truth trace: one JSON line per finished request, flushed per line.

Fields (the cross-team contract): request_id, arrival, first_token, end (epoch s),
chunks ([[emit_epoch_s, n_tokens], ...], one per content chunk), prompt_tokens,
output_tokens, finish_reason, status, fault, endpoint, and for requests that reached an
engine `cached_tokens` (prompt tokens the prefix cache held when the request was first
scheduled; what vLLM's `vllm:prefix_cache_hits` counts for it), `draft_steps`,
`draft_tokens` and `accepted_tokens` (its verification steps, what they proposed and
what the target accepted), and for a chat request that set them `thinking` (its
`chat_template_kwargs` switch), `tools` (the functions offered) and `tool_call` (the one
its reply calls, null for a text reply). `arrival` is when the request's bytes reached the host (a
kernel receive timestamp where the platform gives one, see `receive_stamps.py`), so TTFT
in the trace includes any time the request waited in its socket.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import orjson

from specload.sim import SimConfigError

log = logging.getLogger(__name__)


class TraceWriter:
    """Appends trace records to a file (truncated when opened). A file that can no
    longer be written (a full disk) ends the trace, not the server: the failure is
    logged once and the requests go on being served."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.failed: str | None = None
        try:
            self._fh = open(path, "wb")  # noqa: SIM115 - lives as long as the server
        except OSError as exc:
            raise SimConfigError(f"cannot open --trace file {path}: {exc.strerror}") from None

    def write(self, record: dict[str, Any]) -> None:
        if self.failed is not None:
            return
        try:
            self._fh.write(orjson.dumps(record) + b"\n")
            self._fh.flush()
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            log.error("specload sim: cannot write the trace %s (%s); tracing stopped",
                      self.path, self.failed)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # the last line's flush, on a full disk
            self._fh.close()
