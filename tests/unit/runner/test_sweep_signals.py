"""How `specload sweep` takes Ctrl-C and SIGTERM: the first interrupts, later ones wait."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from specload.runner.sweep import _interrupts

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture
def handlers() -> Iterator[None]:
    """Put this process's own handlers back whatever the test left installed."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _deliver(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.2)  # the handler runs at the next bytecode of the main thread


@pytest.mark.parametrize("sig", SIGNALS)
def test_a_late_signal_does_not_kill_an_interrupted_sweep(handlers: None, sig) -> None:
    # The CI run that found it: a sweep said "interrupted ... resume with" and then
    # died of SIGINT (status -2, not 130), the default handler being back in place.
    sweep = SimpleNamespace(interrupts=0)
    with pytest.raises(KeyboardInterrupt), _interrupts(sweep):  # type: ignore[arg-type]
        _deliver(sig)
    try:
        _deliver(sig)  # while it saves the manifest, says how to resume and exits
    except KeyboardInterrupt:
        pytest.fail("a second signal after the interrupt raised KeyboardInterrupt")
    assert sweep.interrupts == 2


def test_a_sweep_that_was_not_interrupted_puts_the_handlers_back(handlers: None) -> None:
    before = {s: signal.getsignal(s) for s in SIGNALS}
    with _interrupts(SimpleNamespace(interrupts=0)):  # type: ignore[arg-type]
        assert all(signal.getsignal(s) is not before[s] for s in SIGNALS)
    assert {s: signal.getsignal(s) for s in SIGNALS} == before
