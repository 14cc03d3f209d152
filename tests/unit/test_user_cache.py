"""One cache folder rule: specload's, and the copy the vLLM venv's script keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specload.host.user_cache import cache_root
from tests.support import script_module


@pytest.mark.parametrize(("env", "expected"), [
    ({"SPECLOAD_CACHE": "/c/own", "XDG_CACHE_HOME": "/c/xdg"}, "/c/own"),
    ({"XDG_CACHE_HOME": "/c/xdg"}, "/c/xdg/specload"),
    ({"HOME": "/c/home"}, "/c/home/.cache/specload"),
])
def test_the_cache_folder_rule_and_its_copy_agree(env: dict[str, str], expected: str,
                                                  monkeypatch: Any) -> None:
    for name in ("SPECLOAD_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cache_root() == script_module("vllm_model").cache_root() == Path(expected)
