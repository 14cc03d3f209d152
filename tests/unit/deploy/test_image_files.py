"""The Dockerfile and .dockerignore agree, and the base image is a pinned Locust release."""

from __future__ import annotations

import re
import tomllib
import warnings
from importlib.metadata import version

from packaging.requirements import Requirement

from tests.support import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()


def test_every_copied_path_is_let_through_by_dockerignore() -> None:
    allowed = {line[1:] for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.startswith("!")}
    copied = [src for line in DOCKERFILE.splitlines()
              if line.startswith("COPY ") and "--from" not in line
              for src in [w for w in line.split()[1:] if not w.startswith("--")][:-1]]
    assert copied and set(copied) <= allowed
    for src in copied:
        assert (REPO / src).exists(), src


def test_base_image_is_a_pinned_locust_release_that_specload_accepts() -> None:
    pinned = re.search(r"^ARG LOCUST_VERSION=(\d+\.\d+\.\d+)$", DOCKERFILE, re.MULTILINE)
    assert pinned
    assert DOCKERFILE.count("FROM locustio/locust:${LOCUST_VERSION}") == 2
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    locust = next(Requirement(d) for d in deps if Requirement(d).name == "locust")
    assert pinned.group(1) in locust.specifier
    if pinned.group(1) != version("locust"):
        # Not a failure: CI installs the newest Locust that pyproject.toml accepts.
        warnings.warn(f"the image has Locust {pinned.group(1)}, these tests ran with "
                      f"{version('locust')}: bump LOCUST_VERSION in the Dockerfile", stacklevel=1)


def test_image_runs_unprivileged_with_specload_entrypoint() -> None:
    assert re.search(r"^USER 1000:1000$", DOCKERFILE, re.MULTILINE)
    assert DOCKERFILE.rstrip().splitlines()[-1] == 'ENTRYPOINT ["specload-entrypoint"]'
