"""The shell every specload HTML page shares: head, style, inlined plotly.js, figures.

`report.html` (`render`) and `compare.html` (`compare`) are self-contained pages in one
look: plotly.js is inlined so nothing is fetched, and tables with the class `numbers`
are right-aligned and compact.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from specload import __version__

TABLE_CLASS = "numbers"

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1100px;
       color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.fig { margin: 12px 0 28px; }
table.numbers { border-collapse: collapse; font-size: 0.85em; }
table.numbers th, table.numbers td { padding: 3px 8px; text-align: right;
       border-bottom: 1px solid #ddd; white-space: nowrap; }
.warn li { color: #8a4b00; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 0.85em; }
"""


def figures_html(figs: Iterable[go.Figure]) -> str:
    """Each figure in its own block, drawn by the page's inlined plotly.js."""
    return "".join(f'<div class="fig">{pio.to_html(f, full_html=False, include_plotlyjs=False)}'
                   "</div>" for f in figs)


def page(title: str, body: str) -> str:
    """A whole page: `body` is HTML; the title is escaped here."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
{body}
<p>specload {html.escape(__version__)}.</p>
</body></html>
"""
