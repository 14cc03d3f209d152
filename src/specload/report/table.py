"""The per-rung table's number format, shared by every view of it.

The report prints the table and puts it in report.html (`render`), `specload compare`
shows its figures and the Tokens tab's figures process fills it in during a run
(`live_figures`); its columns and their headings are declared in `rung_columns`.
"""

from __future__ import annotations

import math

NONE_SENT = "none sent"  # a latency of a rung in whose window no request started


def cell(value: float) -> str:
    """A table number: 4 significant digits; a percentile censored by timeouts as such."""
    return "> timeout" if value == float("inf") else f"{value:.4g}"


def text(value: object, missing: str = "–") -> str:
    """Any cell as text: numbers through `cell`, NaN and None as `missing`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, float):
        return cell(value)
    return str(value)
