"""Helpers the tests import: start simulated servers, run Locust and sweeps, read run files.

`sims` starts `specload sim` through the project's own launcher, `locust_runs` runs
headless Locust against a server, `sweeps` writes scenarios and runs `specload sweep`
in the foreground or the background, `workers` runs `specload worker` as a load machine
would, `netns` makes test hosts out of network namespaces on one machine, `e2e` holds
the one shared end-to-end sweep, `deploy` renders and checks the container and
Kubernetes files, `best_k` gives the simulator's own best draft length per
concurrency, and `fixtures` turns these into pytest fixtures (registered by
tests/conftest.py). `script_module` imports a script of scripts/, which is no package.
"""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def script_module(name: str) -> ModuleType:
    """scripts/`name`.py imported as module `name` (registered in sys.modules, where
    dataclasses look their module up while a class is made)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
