"""Fault injection: parsing `--fault KIND:FRAC[:PARAM]` and picking faulty requests.

Each request draws one uniform number from an RNG seeded with the server seed, in
arrival order; the fault specs split [0, 1) into consecutive slices of their
fractions, so a given seed and arrival order always fault the same requests and the
kinds never overlap. PARAM defaults are listed in `DEFAULT_PARAMS`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from specload.sim import SimConfigError

DEFAULT_PARAMS: dict[str, float] = {
    "error500": 0.0,
    "error400": 0.0,
    "error429": 1.0,  # Retry-After seconds
    "empty": 0.0,  # a clean stream with no token: the role chunk, then [DONE]
    "cut": 8.0,  # tokens sent before the connection closes
    "stall_first_byte": 2.0,  # seconds before the response starts
    "stall_between": 1.0,  # seconds of silence after the first content chunk
    "malformed": 0.0,
    "stream_error": 0.0,
    "alter_token": 16.0,  # the token (from 0) whose word is replaced by another
}

# What each fault is to a client that reads the stream right: the `error_kind` it records
# (records.ERROR_KINDS; a stall longer than the client's request timeout).
CLIENT_ERROR_KINDS: dict[str, str] = {
    "error500": "http_error",
    "error400": "http_error",
    "error429": "http_error",
    "empty": "empty_stream",
    "cut": "stream_cut",
    "stall_first_byte": "timeout_first_byte",
    "stall_between": "timeout_between_chunks",
    "malformed": "malformed_chunk",
    "stream_error": "stream_error",
}
# Faults the client cannot see as a failure: the request succeeds with a wrong reply.
SILENT_FAULTS = ("alter_token",)


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault kind applied to a fraction of requests."""

    kind: str
    fraction: float
    param: float


def parse_fault(text: str) -> Fault:
    """Parse KIND:FRAC[:PARAM]; SimConfigError with the reason if malformed."""
    parts = text.split(":")
    kind = parts[0]
    if kind not in DEFAULT_PARAMS or not 2 <= len(parts) <= 3:
        raise SimConfigError(
            f"bad --fault {text!r}: expected KIND:FRACTION[:PARAM] with KIND one of "
            + ", ".join(DEFAULT_PARAMS)
        )
    try:
        fraction = float(parts[1])
        param = float(parts[2]) if len(parts) == 3 else DEFAULT_PARAMS[kind]
    except ValueError:
        raise SimConfigError(f"bad --fault {text!r}: FRACTION and PARAM must be numbers") from None
    if not 0 <= fraction <= 1 or param < 0:
        raise SimConfigError(f"bad --fault {text!r}: need 0 <= FRACTION <= 1 and PARAM >= 0")
    return Fault(kind, fraction, param)


class FaultPicker:
    """Seeded per-request choice among the configured faults."""

    def __init__(self, faults: list[Fault], seed: int) -> None:
        total = sum(f.fraction for f in faults)
        if total > 1 + 1e-9:
            raise SimConfigError(f"--fault fractions add up to {total:g}, more than 1")
        self._faults = faults
        self._rng = random.Random(seed ^ 0xFA17)

    def pick(self) -> Fault | None:
        """The fault for the next arriving request, or None."""
        if not self._faults:
            return None
        u = self._rng.random()
        for fault in self._faults:
            if u < fault.fraction:
                return fault
            u -= fault.fraction
        return None
