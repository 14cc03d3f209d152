"""A figure as the page's plotly.js draws it: plain data, made without plotly.py's objects.

plotly.py checks every property as it is set and loads a class per kind of trace; for a
report's figures that was most of what drawing them cost. Here a figure is plain data,
the JSON plotly.js takes (`Figure.to_json`). Every dict in it is a `Spec`, whose keys
also read as attributes and whose unset keys read as None, so a figure reads as a
plotly.py one does (`fig.layout.xaxis.title.text`). The lines and bands across a plot
(`add_hline`, `add_vline`, `add_vrect`) are the shapes and annotations plotly.py makes.
Nothing checks a property's name here: the tests hold every figure to plotly.py's own
validation, and the page's to plotly.js in a browser. The page's look is plotly.py's
default template (`TEMPLATE`), read from its package data with plotly.js itself
(`PLOTLY_JS`, which the web UI's Tokens tab serves too). Importing this module loads
neither plotly nor numpy nor pandas.
"""

from __future__ import annotations

import functools
import re
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import orjson

# found without importing plotly, whose package loads slowly
_PLOTLY = find_spec("plotly")
if _PLOTLY is None or _PLOTLY.origin is None:
    raise ImportError("plotly is not installed (it is a dependency of specload)")
_PACKAGE_DATA = Path(_PLOTLY.origin).parent / "package_data"
PLOTLY_JS = _PACKAGE_DATA / "plotly.min.js"
TEMPLATE = _PACKAGE_DATA / "templates" / "plotly.json"


class Spec(dict):
    """A plotly.js object (a trace, the layout, an axis, a shape...): its keys read as
    attributes too, an unset one as None."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = spec(value)


def spec(value: Any) -> Any:
    """`value` with every dict in it (in lists too) a `Spec`; a key set to None is unset."""
    if isinstance(value, dict):
        return Spec({k: spec(v) for k, v in value.items() if v is not None})
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return [spec(v) for v in value]
    return value


def _merge(target: Spec, props: dict[str, Any]) -> None:
    for key, value in props.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = spec(value)


def scatter(**props: Any) -> Spec:
    return spec({"type": "scatter", **props})


def bar(**props: Any) -> Spec:
    return spec({"type": "bar", **props})


def heatmap(**props: Any) -> Spec:
    return spec({"type": "heatmap", **props})


class Figure:
    """Traces and a layout, changed in place by the methods (each returns the figure)."""

    def __init__(self, *traces: dict[str, Any]) -> None:
        self.data: list[Spec] = [spec(t) for t in traces]
        self.layout = Spec()

    def add_trace(self, trace: dict[str, Any]) -> Figure:
        self.data.append(spec(trace))
        return self

    def update_layout(self, **props: Any) -> Figure:
        _merge(self.layout, props)
        return self

    def _update_axes(self, letter: str, props: dict[str, Any]) -> Figure:
        keys = [k for k in self.layout if re.fullmatch(f"{letter}axis[0-9]*", k)]
        for key in keys or [f"{letter}axis"]:
            _merge(self.layout.setdefault(key, Spec()), props)
        return self

    def update_xaxes(self, **props: Any) -> Figure:
        """Every x axis (the one there is, or a new one) gets `props`."""
        return self._update_axes("x", props)

    def update_yaxes(self, **props: Any) -> Figure:
        return self._update_axes("y", props)

    def _append(self, key: str, item: dict[str, Any]) -> Figure:
        self.layout.setdefault(key, []).append(spec(item))
        return self

    def add_annotation(self, **props: Any) -> Figure:
        return self._append("annotations", props)

    def add_hline(self, y: float, line: dict[str, Any], annotation_text: str | None = None
                  ) -> Figure:
        """A line across the plot at `y`, labelled at its bottom left with the text."""
        self._append("shapes", {"type": "line", "line": line, "xref": "x domain", "x0": 0,
                                "x1": 1, "yref": "y", "y0": y, "y1": y})
        if annotation_text is None:
            return self
        return self.add_annotation(text=annotation_text, showarrow=False, xref="x domain",
                                   x=0, xanchor="left", yref="y", y=y, yanchor="top")

    def add_vline(self, x: float, line: dict[str, Any]) -> Figure:
        """A line from the bottom to the top of the plot at `x`."""
        return self._append("shapes", {"type": "line", "line": line, "xref": "x", "x0": x,
                                       "x1": x, "yref": "y domain", "y0": 0, "y1": 1})

    def add_vrect(self, x0: float, x1: float, **props: Any) -> Figure:
        """A band from `x0` to `x1`, the plot's whole height."""
        return self._append("shapes", {"type": "rect", **props, "xref": "x", "x0": x0,
                                       "x1": x1, "yref": "y domain", "y0": 0, "y1": 1})

    def to_dict(self) -> dict[str, Any]:
        return {"data": self.data, "layout": self.layout}

    def to_json(self) -> bytes:
        """The figure as plotly.js reads it: arrays as lists, NaN as null."""
        return orjson.dumps(self.to_dict(), default=_plain, option=orjson.OPT_SERIALIZE_NUMPY)


def _plain(value: Any) -> Any:
    """What orjson does not write itself: pandas' arrays (`to_numpy`), numpy arrays of
    text or objects and numpy scalars (`tolist`), and pandas' NA."""
    if hasattr(value, "to_numpy"):
        return value.to_numpy()
    if hasattr(value, "tolist"):
        return value.tolist()
    import pandas as pd  # loaded already wherever figures are drawn (the report)

    if value is pd.NA:
        return None
    raise TypeError(f"{type(value).__name__} in a figure")


@functools.cache
def template() -> dict[str, Any]:
    """plotly.py's default template ("plotly"): the look of every figure on the page."""
    return orjson.loads(TEMPLATE.read_bytes())
