"""Figures as plotly.js data: attribute reads, axis updates, JSON of pandas and numpy
values, and the page's script that draws them."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pandas as pd

from specload.report import html_page
from specload.report.plotjs import Figure, Spec, scatter


def test_keys_read_as_attributes_and_unset_ones_as_none() -> None:
    trace = scatter(x=[1, 2], line={"color": "red"}, error_y=None)
    assert isinstance(trace.line, Spec) and trace.line.color == "red"
    assert trace.mode is None and "error_y" not in trace  # None unsets, as in plotly.py
    trace.error_y = {"type": "data", "array": [1, 1]}
    assert trace.error_y.type == "data"
    assert not hasattr(trace, "__array__")  # numpy and pandas must not take it for an array


def test_axis_updates_reach_every_axis_and_merge() -> None:
    fig = Figure().update_xaxes(title={"text": "C"}, type="log")
    fig.update_layout(xaxis2={"overlaying": "x"}).update_xaxes(title={"standoff": 4})
    assert fig.layout.xaxis.title == {"text": "C", "standoff": 4}
    assert fig.layout.xaxis2 == {"overlaying": "x", "title": {"standoff": 4}}
    assert fig.layout.yaxis is None


def test_lines_across_the_plot_are_plotly_pys_shapes() -> None:
    fig = Figure().add_hline(1.0, {"dash": "dash"}, annotation_text="break-even")
    fig.add_vline(30.0, {"dash": "dot"}).add_vrect(20.0, 40.0, opacity=0.1)
    hline, vline, band = fig.layout.shapes
    assert (hline.xref, hline.x0, hline.x1, hline.y0, hline.y1) == ("x domain", 0, 1, 1.0, 1.0)
    assert (vline.yref, vline.x0, vline.y1) == ("y domain", 30.0, 1)
    assert (band.type, band.x0, band.x1, band.opacity) == ("rect", 20.0, 40.0, 0.1)
    (label,) = fig.layout.annotations
    assert (label.text, label.xanchor, label.yanchor, label.y) == ("break-even", "left", "top",
                                                                    1.0)


def test_json_takes_pandas_and_numpy_values() -> None:
    fig = Figure(scatter(
        x=pd.Series([1, 10, 100]), y=np.array([1.5, math.nan, 0.5]),
        customdata=np.stack([np.array([1.0, 2.0]), np.array(["a", "b"])], axis=1),
        text=pd.Series(["x", None], dtype="str"), marker={"size": np.float32(14)},
        ids=pd.array([1, None], dtype="Int64"), zmid=np.int64(1)))
    (trace,) = orjson.loads(fig.to_json())["data"]
    assert trace["x"] == [1, 10, 100] and trace["y"] == [1.5, None, 0.5]
    assert trace["customdata"] == [["1.0", "a"], ["2.0", "b"]]
    assert trace["text"][0] == "x" and trace["ids"] == [1, None]
    assert trace["marker"] == {"size": 14.0} and trace["zmid"] == 1


def test_the_page_draws_each_figure_once_and_no_text_ends_its_script() -> None:
    fig = Figure(scatter(x=[1], y=[2], name="</script><b>"))
    fig.update_layout(height=440)
    block = html_page.figures_html([fig, Figure(scatter(x=[1], y=[3]))])
    assert block.count("Plotly.newPlot(") == 2 and block.count("</script>") == 2
    assert "<\\/script><b>" in block and 'style="height:440px; width:100%;"' in block
    page = html_page.page("t", block)
    assert page.count("specloadTemplate") == 2  # defined once, used by every figure
