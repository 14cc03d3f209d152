"""Importing the load generator changes nothing in Locust; `plugin.install` hooks it in once.

The check runs in a fresh interpreter: other tests of this process install the plugin.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json
import locust
from geventhttpclient.connectionpool import ConnectionPool

def ours():
    return {name: [f.__module__ for f in getattr(locust.events, name)._handlers
                   if f.__module__.startswith("specload")]
            for name in ("init", "init_command_line_parser", "test_start", "test_stop",
                         "quitting")}

patched = lambda: ConnectionPool.get_socket.__module__.startswith("specload")
import specload.loadgen.users, specload.loadgen.sessions, specload.loadgen.open_loop
import specload.loadgen.rate_shape
before = ours(), patched()
from specload.loadgen import plugin, shape
plugin.install(shape)
plugin.install(shape)  # a second locustfile importing the first
print(json.dumps({"before": before, "after": [ours(), patched()]}))
"""


def _probe() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def test_imports_install_nothing_and_install_hooks_each_part_once() -> None:
    got = _probe()
    before, patched_before = got["before"]
    assert before == {name: [] for name in before} and not patched_before
    after, patched_after = got["after"]
    assert patched_after
    assert after["init_command_line_parser"] == ["specload.loadgen.options",
                                                 "specload.loadgen.shape"]
    assert after["init"] == ["specload.loadgen.process_state", "specload.loadgen.health_probe",
                             "specload.loadgen.tokens_tab", "specload.loadgen.worker_watch",
                             "specload.loadgen.recorder", "specload.loadgen.prom_export",
                             "specload.loadgen.loop_clock"]
    assert after["test_start"] == ["specload.loadgen.process_state",
                                   "specload.loadgen.health_probe"]
    assert after["quitting"] == ["specload.loadgen.health_probe"]
