"""Where specload keeps, per user, what it makes once and may reuse.

`$SPECLOAD_CACHE`, else `$XDG_CACHE_HOME/specload`, else `~/.cache/specload`: the rule
the engine build scripts follow (`scripts/build_llama_server.sh`,
`scripts/setup_vllm_cpu.sh`), so the real engines' builds and the report's measured
rung tables (`report/measure_cache.py`) share one folder.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The per-user cache folder (it may not exist yet)."""
    given = os.environ.get("SPECLOAD_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specload"
