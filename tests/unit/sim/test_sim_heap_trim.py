"""heap_trim: malloc_trim where glibc has it, a harmless no-op elsewhere."""

from __future__ import annotations

import asyncio
import platform
import sys

import pytest

from specload.sim import heap_trim


def test_trim_works_on_glibc_and_is_a_no_op_elsewhere() -> None:
    on_glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert heap_trim.trim() is on_glibc


@pytest.mark.skipif(heap_trim._malloc_trim is None, reason="needs glibc's malloc_trim")
def test_trim_forever_trims_until_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap_trim, "_malloc_trim", lambda pad: calls.append(pad) or 1)

    async def run() -> None:
        task = asyncio.create_task(heap_trim.trim_forever(0.01))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert len(calls) >= 3 and set(calls) == {0}


def test_trim_forever_returns_at_once_without_malloc_trim(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap_trim, "_malloc_trim", None)
    asyncio.run(asyncio.wait_for(heap_trim.trim_forever(0.01), timeout=1))
