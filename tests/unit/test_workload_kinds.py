"""The workload kinds: every name a kind lists exists where its layer resolves it."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

import specload
from specload.config.scenario import Workload
from specload.report import figures, quality
from specload.report.rate_axis import guessed_kind, workload_kind
from specload.report.rung_columns import BY_NAME, Combine, View
from specload.runfiles.manifest import Manifest
from specload.runner.locust_proc import LOCUSTFILES
from specload.traffic.kinds import (
    KINDS,
    OPEN,
    SESSION_KEYS,
    SESSIONS,
    USERS,
    WorkloadKind,
    kinds_taking,
    workload_keys,
)

EACH = pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))


def _exported(locustfile: Path) -> set[str]:
    """The names a locustfile's `__all__` lists (read without importing Locust)."""
    for node in ast.walk(ast.parse(locustfile.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


@EACH
def test_each_name_a_kind_lists_resolves(kind: WorkloadKind) -> None:
    assert View(kind.view).value == kind.view
    assert set(kind.figures) <= set(figures.FIGURES)
    assert set(kind.checks) <= set(quality.CHECKS)
    assert BY_NAME[kind.axis.column].combine == Combine.KEY
    path = LOCUSTFILES[kind.name]
    assert path.is_file() and path.parent == Path(specload.__file__).parent / "loadgen"
    assert set(kind.user_classes) <= _exported(path)
    assert set(kind.every_key) <= set(Workload.model_fields)


def test_every_registered_figure_and_check_is_shown_by_some_kind() -> None:
    assert set(figures.FIGURES) == {f for k in KINDS.values() for f in k.figures}
    assert set(quality.CHECKS) == {c for k in KINDS.values() for c in k.checks}
    assert set(quality.CHECKS) >= quality.QUIET_WHEN_FAILING


def test_every_workload_key_belongs_to_a_kind() -> None:
    assert set(workload_keys()) == set(Workload.model_fields) - {"kind"}
    assert kinds_taking("turns") == "kind: sessions (or open with unit: sessions)"
    assert kinds_taking("rates") == "kind: open"


def test_open_sessions_take_the_session_keys() -> None:
    assert OPEN.holds_sessions("sessions") and not OPEN.holds_sessions("requests")
    assert set(SESSION_KEYS) <= set(OPEN.keys_for("sessions"))
    assert not set(SESSION_KEYS) & set(OPEN.keys_for("requests"))
    assert SESSIONS.holds_sessions("requests") and not USERS.holds_sessions("sessions")


def test_each_axis_passes_its_levels_to_locust() -> None:
    assert USERS.axis.arg([1, 10, 250]) == ["--ladder", "1,10,250"]
    assert OPEN.axis.arg([0.5, 2.0, 8.0]) == ["--rates", "0.5,2,8"]
    assert (USERS.axis.rung(10), OPEN.axis.rung(2.0)) == ("C=10", "rate=2/s")


def _manifest(workload: dict[str, object] | None) -> Manifest:
    scenario = {"name": "t"} | ({"workload": workload} if workload is not None else {})
    return Manifest(scenario=scenario, arms=[])


def test_the_report_reads_the_kind_from_the_manifest() -> None:
    rates = pd.DataFrame({"arm": ["a"], "concurrency": [64], "rate": [2.0]})
    users = pd.DataFrame({"arm": ["a"], "concurrency": [4], "sessions": [0]})
    assert workload_kind(_manifest({"kind": "sessions"}), users) is SESSIONS
    assert workload_kind(_manifest({"kind": "users"}), rates) is USERS
    assert workload_kind(_manifest(None), rates) is USERS  # before `workload:` existed
    # no manifest, or a kind this version does not know: the columns say
    assert workload_kind(None, rates) is OPEN
    assert workload_kind(_manifest({"kind": "crowd"}), rates) is OPEN
    assert guessed_kind(users.assign(sessions=2)) is SESSIONS
    assert guessed_kind(users) is USERS
