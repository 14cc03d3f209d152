"""Acceptance length per rung: from the server's counters, or from the client's chunks.

Under speculative decoding one engine step emits several tokens. An engine that sends
them as one event shows them to the client as tokens per chunk, an estimate of the
acceptance length; one that streams one event per token (`Engine.per_token_events`,
or any server whose tokens per chunk stays at 1 while its counters give more, and
never rises above 1 at another rung) shows
1.00 whatever it accepted. `with_acceptance` adds `accept_len` with its source per rung:
the server's figure where /metrics gave one, else the client's tokens per chunk, but
never the client's for a one-event-per-token stream. `per_token_arms` names the arms
that stream so, for the note that explains why the columns differ and why their chunk
and token inter-token latencies are the same numbers.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from specload.engines import per_token_events
from specload.report.run_files import ArmSource

ONE_TOKEN_TOLERANCE = 0.01  # tokens per chunk within this of 1: one token per event
SERVER_ABOVE_ONE = 1.05  # a server acceptance length above this: speculation accepted


def _streams_per_token(part: pd.DataFrame, engine: str | None) -> bool:
    tpc = part.get("tokens_per_chunk", pd.Series(dtype=float)).to_numpy(dtype=float)
    server = part.get("accept_len_mean", pd.Series(dtype=float)).to_numpy(dtype=float)
    one = np.isfinite(tpc) & (np.abs(tpc - 1.0) <= ONE_TOKEN_TOLERANCE)
    accepted = np.isfinite(server) & (server > SERVER_ABOVE_ONE)
    # a server seen sending several tokens in one event at some rung does not stream
    # one per token: a rung at 1 is one where it hardly speculated (a schedule's k = 0)
    several = np.isfinite(tpc) & (tpc > 1.0 + ONE_TOKEN_TOLERANCE)
    return per_token_events(engine) or bool((one & accepted).any() and not several.any())


def per_token_arms(summary: pd.DataFrame, arms: Sequence[ArmSource]) -> list[str]:
    """The arms whose server streams one event per token (known, or seen in the data)."""
    engines = {a.name: a.engine for a in arms}
    return [str(name) for name, part in summary.groupby("arm", sort=False)
            if _streams_per_token(part, engines.get(str(name)))]


def with_acceptance(summary: pd.DataFrame, per_token: Collection[str]) -> pd.DataFrame:
    """`summary` with `accept_len` and `accept_len_source` ("server", "chunks" or ""),
    never from the chunks of the `per_token` arms (`per_token_arms`)."""
    if summary.empty:
        return summary
    server = summary.get("accept_len_mean", pd.Series(np.nan, index=summary.index))
    chunks = summary.get("tokens_per_chunk", pd.Series(np.nan, index=summary.index))
    have_server = server.notna().to_numpy()
    chunks_ok = (chunks.notna() & ~summary["arm"].isin(list(per_token))).to_numpy()
    out = summary.copy()
    out["accept_len"] = np.where(have_server, server, np.where(chunks_ok, chunks, np.nan))
    out["accept_len_source"] = np.where(have_server, "server",
                                        np.where(chunks_ok, "chunks", ""))
    return out


def per_token_note(arms: Sequence[str]) -> str | None:
    """The table's note for arms that stream one event per token (None without any)."""
    if not arms:
        return None
    return (f"{', '.join(arms)}: the server streams one event per token, so tok/chunk "
            "stays at 1 under speculation; the acceptance length is the server's "
            "(/metrics), and chunk and token inter-token latencies are the same numbers")
