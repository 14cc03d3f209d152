"""Helpers the tests import: start simulated servers, run Locust and sweeps, read run files.

`sims` starts `specload sim` through the project's own launcher, `locust_runs` runs
headless Locust against a server, `sweeps` writes scenarios and runs `specload sweep`
in the foreground or the background, `workers` runs `specload worker` as a load machine
would, `netns` makes test hosts out of network namespaces on one machine, `e2e` holds
the one shared end-to-end sweep, `deploy` renders and checks the container and
Kubernetes files, `best_k` gives the simulator's own best draft length per
concurrency, and `fixtures` turns these into pytest fixtures (registered by
tests/conftest.py).
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
