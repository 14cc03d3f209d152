"""The per-rung columns declared once: unit, heading, how repeats combine; each view's.

A rung's figures are columns of the same name everywhere: `client_metrics.measure` and
the other measuring modules write them, `aggregate.combine_reps` combines a rung's
repeats by each column's `Combine` rule (a numeric column declared nowhere is a mean),
and the views list which columns they show: the report's per-rung table for each
workload kind (`render`), summary.csv's leading columns, the web UI's Tokens tab (its
table, its time series and its rungs in GET /specload/live: `live_figures`,
`loadgen/tokens_tab.py`), the figures `specload compare` compares and the sweep's
progress lines. This module imports nothing heavy: the Locust process that serves the
Tokens tab reads it without loading pandas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Combine(StrEnum):
    """How one rung's repeats combine into its summary row."""

    KEY = "key"  # the rung's identity: repeats are grouped by it
    MEAN = "mean"
    MEAN_SPREAD = "mean, min, max and std"  # `spread_names` names the spread columns
    SUM = "sum"  # counts
    MERGE = "merge"  # per-kind counts, added kind by kind
    FIRST = "first"  # the first repeat's non-empty value
    REP_ONLY = "per repeat only"  # not in the summary
    AFTER = "after"  # computed from the combined rows, not measured per repeat


class View(StrEnum):
    """Where rung columns are shown; the report's tables are named by workload kind."""

    USERS = "users"
    SESSIONS = "sessions"
    OPEN = "open"
    TRACE = "trace"
    STEPS = "steps"
    SUMMARY = "summary"  # summary.csv's leading columns, in this order
    LIVE = "live"  # the Tokens tab's per-rung table
    LIVE_RUNG = "live rung"  # a rung in GET /specload/live
    SERIES = "series"  # the Tokens tab's time series
    COMPARE = "compare"  # `specload compare`: per-rung figures against the baseline
    PROGRESS = "progress"  # what a sweep's progress line keeps of a rung's figures


@dataclass(frozen=True, slots=True)
class Column:
    """One per-rung column; `in_view` gives a view's own heading where it differs."""

    name: str
    unit: str
    heading: str
    combine: Combine = Combine.MEAN
    in_view: dict[View, str] = field(default_factory=dict, compare=False)

    def heading_in(self, view: View) -> str:
        return self.in_view.get(view, self.heading)


# A view's own heading for a column, where it differs.
_IN_VIEW: dict[str, dict[View, str]] = {
    "concurrency": {View.SESSIONS: "sessions"},
    "achieved_concurrency": {View.SESSIONS: "in flight", View.OPEN: "in flight",
                             View.TRACE: "in flight"},
}
# name | unit | heading | how repeats combine (a `Combine`; blank: the mean). The order
# matters where a rule's columns are read in order: the keys group by (arm, concurrency,
# rate, speed, step), and the summed columns follow the means in summary.csv. A rung's
# index is the same in every repeat; the mean is rounded.
_DECLARED = """
arm                   | name        | arm                    | key
concurrency           | users       | C                      | key
rate                  | 1/s         | rate/s                 | key
speed                 | ratio       | speed                  | key
step                  | index       | step                   | key
from_users            | users       | from C                 |
rung                  | index       | rung                   |
output_tok_s          | tok/s       | tok/s                  | mean, min, max and std
output_tok_s_se       | tok/s       | tok/s std. error       | per repeat only
settle_s              | s           | settles in s           |
lost_tokens           | tokens      | tokens lost            |
timeline_tok_s        | tok/s       | tok/s by time          | first
decode_tok_s_per_user | tok/s       | decode tok/s/user      |
request_tok_s_p50     | tok/s       | tokens/E2E p50         |
requests_per_s        | 1/s         | requests/s             |
server_output_tok_s   | tok/s       | server tok/s           |
trace_ratio           | ratio       | vs trace               |
speedup               | ratio       | speedup                | after
envelope_efficiency   | ratio       | env. eff.              | after
envelope_share        | ratio       | share of best          | after
requests              | requests    | requests               | sum
requests_started      | requests    | started                | sum
failures              | requests    | failures               | sum
interrupted           | requests    | unfinished             | sum
reconnects            | connections | reconnects             | sum
timeouts              | requests    | timeouts               | sum
workers_lost          | workers     | workers lost           | sum
clock_problems        | workers     | clock problems         | sum
ttft_p50_ms           | ms          | TTFT p50 ms            |
ttft_p50_lb_ms        | ms          | TTFT p50 bound ms      |
ttft_p99_ms           | ms          | TTFT p99 ms            |
ttft_sched_p99_ms     | ms          | TTFT p99 sched ms      |
tpot_p50_ms           | ms          | TPOT p50 ms            |
tpot_p99_ms           | ms          | TPOT p99 ms            |
itl_chunk_p50_ms      | ms          | ITL chunk p50 ms       |
itl_token_p50_ms      | ms          | ITL token p50 ms       |
e2e_p50_ms            | ms          | E2E p50 ms             |
e2e_sched_mean_ms     | ms          | E2E mean sched ms      |
e2e_sched_mean_ms_se  | ms          | E2E mean sched s.e. ms | per repeat only
tokens_per_chunk      | tokens      | tok/chunk              |
estimated_token_share | share       | estimated tokens       |
accept_len            | tokens      | accept len             | after
accept_len_mean       | tokens      | server accept len      |
accept_rate           | share       | accept rate            |
req_accept_rate       | share       | accept rate (requests) |
req_accept_rate_se    | share       | accept rate s.e. (requests) |
req_accept_len        | tokens      | tok/step (requests)    |
req_accept_len_p10    | tokens      | tok/step p10 (requests) |
req_accept_len_p50    | tokens      | tok/step p50 (requests) |
req_accept_len_p90    | tokens      | tok/step p90 (requests) |
req_spec_requests     | requests    | requests with drafts   | sum
req_draft_tokens      | tokens      | drafts (requests)      |
achieved_concurrency  | requests    | achieved C             |
server_running_mean   | requests    | batch                  |
prefix_hit_rate       | share       | cache hits             |
prompt_tokens_p50     | tokens      | context p50            |
prompt_tokens_p90     | tokens      | context p90            |
achieved_rate         | 1/s         | achieved/s             |
late_share            | share       | late                   |
late_cap_share        | share       | late (cap)             |
late_p99_ms           | ms          | late p99 ms            |
client_cpu_max        | % of a core | load CPU %             |
client_lag_p99_max_ms | ms          | load lag p99 ms        |
rep                   | index       | repeat                 | per repeat only
window_start          | s           | window start           | per repeat only
failures_by_kind      | requests    | failures by kind       | merge
req_accept_len_hist   | requests    | requests by accept len | merge
accept_step_steps     | steps       | steps by step bin      | merge
accept_step_accepted  | tokens      | accepted by step bin   | merge
by_category           | mapping     | per prompt category    | per repeat only
by_prompt_length      | mapping     | per prompt length bin  | per repeat only
tpot_by_position      | mapping     | TPOT by output position | per repeat only
replies               | mapping     | replies by prompt      | per repeat only
window_source         | name        | window source          | per repeat only
top_failure           | text        | top failure            | first
lost_detail           | text        | workers lost: detail   | per repeat only
clock_detail          | text        | clock problems: detail | per repeat only
"""


def _declared(table: str) -> tuple[Column, ...]:
    rows = [[f.strip() for f in line.split("|")] for line in table.strip().splitlines()]
    return tuple(Column(name, unit, heading, Combine(combine or Combine.MEAN),
                        _IN_VIEW.get(name, {})) for name, unit, heading, combine in rows)


COLUMNS: tuple[Column, ...] = _declared(_DECLARED)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}

_LIVE = ("concurrency", "output_tok_s", "decode_tok_s_per_user", "request_tok_s_p50",
         "tokens_per_chunk", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
         "achieved_concurrency", "requests", "failures", "interrupted", "reconnects",
         "client_cpu_max", "client_lag_p99_max_ms")
# Each view's columns in the order it shows them (a table shows those its rows have).
VIEWS: dict[View, tuple[str, ...]] = {
    View.USERS: ("arm", "concurrency", "server_running_mean", "output_tok_s", "speedup",
                 "decode_tok_s_per_user", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                 "tokens_per_chunk", "accept_len", "req_accept_rate", "achieved_concurrency",
                 "prefix_hit_rate",
                 "requests", "failures", "interrupted", "trace_ratio", "envelope_efficiency",
                 "envelope_share"),
    # chat sessions: C counts sessions; the batch offered is the requests in flight
    View.SESSIONS: ("arm", "concurrency", "achieved_concurrency", "server_running_mean",
                    "output_tok_s", "speedup", "prompt_tokens_p50", "prompt_tokens_p90",
                    "prefix_hit_rate", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                    "requests", "failures", "trace_ratio"),
    # open loop: rungs are arrival rates; latencies from the send and from the schedule
    View.OPEN: ("arm", "rate", "achieved_rate", "late_share", "late_cap_share",
                "achieved_concurrency", "server_running_mean", "output_tok_s", "speedup",
                "prefix_hit_rate", "ttft_p50_ms", "ttft_sched_p99_ms", "e2e_sched_mean_ms",
                "tpot_p50_ms", "requests", "failures", "trace_ratio"),
    # trace replay: rungs are speeds of the trace, each its planned rate; as the open loop
    View.TRACE: ("arm", "speed", "rate", "achieved_rate", "late_share", "late_cap_share",
                 "late_p99_ms", "achieved_concurrency", "server_running_mean",
                 "output_tok_s", "speedup", "prefix_hit_rate", "prompt_tokens_p50",
                 "prompt_tokens_p90", "ttft_p50_ms", "ttft_sched_p99_ms", "e2e_sched_mean_ms",
                 "tpot_p50_ms", "requests", "failures", "trace_ratio"),
    # load steps: a step's steady figures and how it settled after the jump into it
    View.STEPS: ("arm", "step", "from_users", "concurrency", "server_running_mean",
                 "output_tok_s", "settle_s", "lost_tokens", "ttft_p50_ms", "tpot_p50_ms",
                 "tokens_per_chunk", "requests", "failures", "trace_ratio"),
    View.SUMMARY: ("arm", "concurrency", "output_tok_s", "decode_tok_s_per_user",
                   "request_tok_s_p50", "requests_per_s", "requests", "failures",
                   "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
                   "itl_chunk_p50_ms", "itl_token_p50_ms", "e2e_p50_ms", "tokens_per_chunk",
                   "achieved_concurrency", "server_output_tok_s", "accept_len_mean",
                   "accept_rate", "req_accept_rate", "req_accept_len"),
    # one arm during a run: each request's own rate, and the load processes' health
    View.LIVE: _LIVE,
    View.LIVE_RUNG: (*_LIVE, "rung", "timeouts", "top_failure", "estimated_token_share"),
    View.SERIES: ("output_tok_s", "decode_tok_s_per_user", "request_tok_s_p50",
                  "tokens_per_chunk", "ttft_p50_ms", "ttft_p99_ms", "achieved_concurrency"),
    View.COMPARE: ("output_tok_s", "speedup"),
    View.PROGRESS: ("output_tok_s", "requests", "requests_started", "failures", "top_failure",
                    "timeouts", "interrupted", "ttft_p50_ms", "ttft_p50_lb_ms", "ttft_p99_ms",
                    "tpot_p50_ms", "achieved_concurrency", "estimated_token_share"),
}
SPREAD_STATS = ("min", "max", "std")


def names(view: View) -> tuple[str, ...]:
    """The view's columns, in its order."""
    return VIEWS[view]


def headings(view: View) -> dict[str, str]:
    """The view's columns, in its order, each with its heading there."""
    return {n: BY_NAME[n].heading_in(view) for n in VIEWS[view]}


def combined_by(*rules: Combine) -> tuple[str, ...]:
    """The columns whose repeats combine by one of `rules`, in declaration order."""
    return tuple(c.name for c in COLUMNS if c.combine in rules)


def views_of(name: str) -> tuple[View, ...]:
    """The views that show the column."""
    return tuple(v for v, shown in VIEWS.items() if name in shown)


def spread_names(name: str) -> tuple[str, ...]:
    """The summary's spread columns of a `MEAN_SPREAD` column: its min, max and std."""
    return tuple(f"{name}_{stat}" for stat in SPREAD_STATS)


def reference() -> str:
    """docs/columns.md's table: every declared column, its unit, heading, how a rung's
    repeats combine and where it is shown (a test keeps the page so)."""
    lines = ["| column | unit | heading | repeats combine by | shown in |",
             "|---|---|---|---|---|"]
    for c in COLUMNS:
        shown = ", ".join(v.value for v in views_of(c.name)) or "summary.csv"
        lines.append(f"| `{c.name}` | {c.unit} | {c.heading} | {c.combine.value} | {shown} |")
    return "\n".join(lines)
