"""StartGate: queued request starts yield to pending reads, and never wait forever."""

from __future__ import annotations

import time

import gevent
import pytest
from gevent import socket

from specload.loadgen.start_gate import StartGate


def _spin(seconds: float) -> None:
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


def _wave(gate: StartGate | None) -> list[str]:
    """40 users start (1 ms of CPU each) while a socket gets a byte every 2 ms."""
    order: list[str] = []
    a, b = socket.socketpair()

    def user(i: int) -> None:
        if gate is not None:
            gate.wait()
        _spin(0.001)
        order.append("start")

    def reader() -> None:
        for _ in range(5):
            a.recv(1)
            order.append("read")

    def writer() -> None:
        for _ in range(5):
            gevent.sleep(0.002)
            b.send(b"x")

    try:
        gevent.joinall([gevent.spawn(user, i) for i in range(40)]
                       + [gevent.spawn(reader), gevent.spawn(writer)], timeout=30)
    finally:
        a.close()
        b.close()
    return order


def test_without_the_gate_a_wave_of_starts_blocks_reads() -> None:
    order = _wave(None)
    assert order.count("start") == 40 and order.count("read") == 5, order
    assert order.index("read") >= 40  # every start ran before the first read


def test_gate_lets_reads_in_between_starts() -> None:
    gate = StartGate(max_wait_s=10.0)  # only idle passes release users here
    order = _wave(gate)
    assert order.count("start") == 40 and order.count("read") == 5
    assert order.index("read") < 20
    assert gate.released_idle == 40 and gate.released_timeout == 0


def test_a_loop_that_is_never_idle_releases_after_max_wait() -> None:
    gate = StartGate(max_wait_s=0.05)
    waited: list[float] = []

    def busy() -> None:  # keeps a callback pending on every loop pass
        t = time.perf_counter()
        while time.perf_counter() - t < 0.4:
            gevent.sleep(0)

    def user() -> None:
        t = time.perf_counter()
        gate.wait()
        waited.append(time.perf_counter() - t)

    gevent.joinall([gevent.spawn(busy), gevent.spawn(user)], timeout=10)
    assert len(waited) == 1 and 0.04 <= waited[0] < 0.35
    assert gate.released_timeout == 1 and gate.released_idle == 0


def test_a_user_killed_while_waiting_does_not_block_the_next() -> None:
    gate = StartGate(max_wait_s=5.0)
    started: list[int] = []
    stop_busy = False

    def busy() -> None:  # no idle pass while both users park
        while not stop_busy:
            gevent.sleep(0)

    def user(i: int) -> None:
        gate.wait()
        started.append(i)

    spinner = gevent.spawn(busy)
    first, second = gevent.spawn(user, 1), gevent.spawn(user, 2)
    gevent.sleep(0.01)
    assert started == []  # both parked
    first.kill()
    stop_busy = True
    second.join(timeout=2)
    spinner.join(timeout=2)
    assert started == [2] and gate.released_idle == 1 and gate.released_timeout == 0


@pytest.mark.parametrize("n", [1, 200])
def test_every_waiter_gets_through(n: int) -> None:
    gate = StartGate()
    done: list[int] = []
    gevent.joinall([gevent.spawn(lambda i=i: (gate.wait(), done.append(i)))
                    for i in range(n)], timeout=10)
    assert sorted(done) == list(range(n))
