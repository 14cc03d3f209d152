"""Locust's stats history as a cross-check of the request records."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specload.report.locust_history import crosscheck
from specload.report.windows import Window

W = Window(0, 4, 10.0, 20.0)


def _history(sizes: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"Timestamp": [9, 11, 15, 18, 21], "Name": ["Aggregated"] * 5,
                         "Total Request Count": [1, 2, 4, 8, 9],
                         "Total Average Content Size": sizes})


def test_crosscheck_agrees_within_timestamp_granularity() -> None:
    # Locust: 8 x 150 - 2 x 100 = 1000 tokens completed between its samples at 11 and 18.
    hist = _history([100.0, 100.0, 150.0, 150.0, 150.0])
    end = np.array([11.5, 13.0, 16.0, 18.5, 25.0])
    tokens = np.array([400.0, 300.0, 200.0, 100.0, 999.0])
    rate, diff = crosscheck(hist, end, tokens, W)
    assert rate == pytest.approx(1000.0 / 7)
    assert diff == 0.0  # records: 500 strictly inside, 1000 with both edge seconds


def test_crosscheck_reports_missing_records() -> None:
    hist = _history([100.0, 100.0, 150.0, 150.0, 150.0])
    end = np.array([13.0, 16.0])
    tokens = np.array([300.0, 200.0])
    _, diff = crosscheck(hist, end, tokens, W)
    assert diff == pytest.approx(-0.5)
    _, diff = crosscheck(None, end, tokens, W)
    assert math.isnan(diff)
