"""The Tokens tab's script draws exactly the time series the figures' process keeps."""

from __future__ import annotations

import json
import re
from importlib import resources

from specload.report.rung_columns import View, names


def test_the_script_draws_the_declared_series() -> None:
    # read as a file: importing tokens_tab would import Locust
    script = (resources.files("specload.loadgen") / "static" / "tokens_tab.js").read_text(
        encoding="utf-8")
    # each chart's `series: [[key, legend], ...]`, and the series a chart draws its own way
    charts = re.findall(r"series: (\[(?:\[[^\]]*\],?\s*)*\])", script)
    charted = {key for chart in charts for key, _ in json.loads(chart)}
    read = set(re.findall(r"p\.series\.(\w+)", script))
    assert len(charts) > 1 and charted | read == {"t", *names(View.SERIES)}
