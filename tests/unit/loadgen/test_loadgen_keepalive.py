"""The non-yielding keep-alive check: idle sockets are reused, anything else is not."""

from __future__ import annotations

import socket

import gevent.socket
from geventhttpclient.connectionpool import ConnectionPool

from specload.loadgen import keepalive


def test_idle_open_socket_is_reusable_closed_or_dirty_is_not() -> None:
    a, b = socket.socketpair()
    with a, b:
        assert keepalive.socket_is_idle(a)
        b.sendall(b"x")  # stray bytes on an idle connection
        assert not keepalive.socket_is_idle(a)
        assert a.recv(1) == b"x"  # the check only peeked
        assert keepalive.socket_is_idle(a)
        b.close()  # the server closed the keep-alive connection
        assert not keepalive.socket_is_idle(a)
    assert not keepalive.socket_is_idle(a)  # closed locally
    assert not keepalive.socket_is_idle(None)


def test_gevent_socket_checked_without_yielding() -> None:
    a, b = socket.socketpair()
    ga = gevent.socket.socket(fileno=a.detach())
    switched = []
    gevent.spawn(switched.append, True)
    with ga, b:
        assert keepalive.socket_is_idle(ga)
        assert not switched  # no trip through the hub: other greenlets did not run
        keepalive.install()
        pool = ConnectionPool.__new__(ConnectionPool)  # only its method is needed
        assert pool._is_socket_alive(ga)
        b.close()
        assert not pool._is_socket_alive(ga)
