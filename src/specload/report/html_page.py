"""The shell every specload HTML page shares: head, style, inlined plotly.js, figures.

`report.html` (`render`) and `compare.html` (`compare`) are self-contained pages in one
look: plotly.js and plotly.py's default template are inlined once, so nothing is
fetched, each figure is its JSON and one `Plotly.newPlot` call (`report/plotjs.py`), and
tables with the class `numbers` are right-aligned and compact.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Iterable

import orjson

from specload import __version__
from specload.report.plotjs import PLOTLY_JS, Figure, template

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


def _script_json(data: bytes) -> str:
    # "</" would end the script element early (`</script>` in a hover text)
    return data.replace(b"</", b"<\\/").decode()


def _figure_html(index: int, fig: Figure) -> str:
    data = fig.to_json()
    name = f"fig-{index}-{hashlib.blake2b(data, digest_size=6).hexdigest()}"
    height = fig.layout.height
    return (f'<div class="fig" style="height:{f"{height}px" if height else "100%"}; '
            f'width:100%;"><div id="{name}" class="plotly-graph-div" '
            'style="height:100%; width:100%;"></div><script>'
            f'Plotly.newPlot("{name}", ...specloadFigure({_script_json(data)}));'
            "</script></div>")


def figures_html(figs: Iterable[Figure]) -> str:
    """Each figure in its own block, drawn by the page's inlined plotly.js."""
    return "".join(_figure_html(i, f) for i, f in enumerate(figs))


def page(title: str, body: str) -> str:
    """A whole page: `body` is HTML; the title is escaped here."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style>
<script type="text/javascript">{PLOTLY_JS.read_text(encoding="utf-8")}</script>
<script type="text/javascript">
const specloadTemplate = {_script_json(orjson.dumps(template()))};
function specloadFigure(fig) {{  // Plotly.newPlot's arguments, in the page's one look
  return [fig.data, Object.assign({{template: specloadTemplate}}, fig.layout),
          {{responsive: true}}];
}}
</script>
</head><body>
{body}
<p>specload {html.escape(__version__)}.</p>
</body></html>
"""
