"""Test-wide setup: the fixtures of `tests.support` are available to every test.

Tests are in three tiers: the default `pytest` run (unit tests and quick integration
tests, about two minutes on four xdist workers), `pytest -m slow` (long end-to-end
runs) and `pytest -m real` (real engines; CI runs all three). The real tier measures
speed, so its modules run one at a time in one process, whatever `-n` says: two real
engines on two cores at once would each measure the other. In the slow tier the files
that take minutes (marked `long` with their seconds) are handed to the xdist workers
first, so no worker is left with one of them at the end. Outside the real tier, each
test process keeps specload's per-user cache (`SPECLOAD_CACHE`: measured rung tables)
in a folder of its own, removed at its end; the real tier keeps the user's, where its
engines are built.

Locust monkey-patches the standard library when it is imported. pytest-xdist's workers
talk to their controller through threads that a patched `threading` breaks, and no
in-process test needs the patch (they use gevent's own sockets and hub), so Locust is
imported here unpatched, before any test module imports it. The variable is removed
again at once: Locust processes that tests start patch as usual. Every test starts with
the gevent loop's clock read now, so no timer it starts counts from a reading that tests
before it, run without the loop, left behind.
"""

import os
import shutil
import tempfile
from typing import Any

os.environ["LOCUST_SKIP_MONKEY_PATCH"] = "1"
try:
    import locust  # noqa: F401
finally:
    del os.environ["LOCUST_SKIP_MONKEY_PATCH"]

import gevent
import pytest

pytest_plugins = ("tests.support.fixtures",)


def pytest_configure(config: pytest.Config) -> None:
    # before xdist's own (trylast) hook, which starts the workers unless dist is "no"
    tier = (config.option.markexpr or "").strip()
    if tier.startswith("real"):  # `real`, or a part of it (`real and untimed`: .ci/run)
        config.option.dist, config.option.numprocesses = "no", None
    else:
        cache = tempfile.mkdtemp(prefix="specload-test-cache-")
        os.environ["SPECLOAD_CACHE"] = cache
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    if tier == "slow":
        # xdist hands out test files in collection order, not by how many tests each
        # holds, so the long ones (`long` below) start first instead of last
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files marked `long(seconds)` first, longest first; the rest as collected. A real
    engine's test that is not `untimed` measures speed: it is a `timing` test too."""
    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        return marker.args[0] if marker else 0.0

    items.sort(key=lambda item: -seconds(item))
    for item in items:
        if item.get_closest_marker("real") and not item.get_closest_marker("untimed"):
            item.add_marker(pytest.mark.timing)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The tests that hold wall-clock bounds on a shared machine, counted for the log."""
    counts = {kind: sum(1 for r in terminalreporter.stats.get(kind, [])
                        if r.when == "call" and "timing" in r.keywords)
              for kind in ("passed", "rerun", "failed")}
    if any(counts.values()):
        terminalreporter.write_line(
            "timing tests (wall-clock bounds on a shared machine): "
            + ", ".join(f"{n} {kind}" for kind, n in counts.items()))


@pytest.fixture(autouse=True)
def _gevent_clock_read_now() -> None:
    """Each test starts with the gevent loop's clock read now. The loop reads the clock
    once per pass, and a timer counts from that reading (gevent.sleep alone reads it
    again): a worker that ran tests without the loop for longer than a later test's
    timeout (plain sockets, subprocesses) left a reading so old that the test's
    `joinall(timeout=30)` returned at once, before its 2 ms sleeps had run."""
    gevent.get_hub().loop.update_now()
