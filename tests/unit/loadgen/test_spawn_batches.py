"""`spawn_batches`: Locust's spawn loop lets the event loop run between batches of users."""

from __future__ import annotations

from itertools import pairwise

import gevent
from locust.argument_parser import get_parser
from locust.env import Environment

from specload.loadgen import plugin, spawn_batches
from specload.loadgen.users import ChatStreamUser

plugin.install()

HOST = "http://127.0.0.1:9"  # never contacted: the users are created, not started


def test_a_spawn_message_of_many_users_yields_between_batches() -> None:
    env = Environment(user_classes=[ChatStreamUser], host=HOST,
                      parsed_options=get_parser().parse_args(["--host", HOST]))
    runner = env.create_local_runner()
    ChatStreamUser.host = HOST
    users = 5 * spawn_batches.BATCH
    created: list[int] = []
    seen: list[int] = []

    def spawn() -> None:
        # the loop Locust runs for one spawn message, without starting the users
        for _ in range(users):
            created.append(id(ChatStreamUser(env)))

    def reader() -> None:  # a stream in flight, waiting for its turn to read
        while len(created) < users:
            seen.append(len(created))
            gevent.sleep(0)

    try:
        gevent.joinall([gevent.spawn(spawn), gevent.spawn(reader)], timeout=10,
                       raise_error=True)
    finally:
        runner.quit()
    assert len(created) == users
    # the other greenlet ran between batches, never more than a batch apart
    steps = [b - a for a, b in pairwise(seen)]
    assert len(seen) >= users // spawn_batches.BATCH, seen
    assert max(steps) <= spawn_batches.BATCH, seen


def test_a_spawn_killed_at_its_yield_leaves_no_half_made_user() -> None:
    env = Environment(user_classes=[ChatStreamUser], host=HOST,
                      parsed_options=get_parser().parse_args(["--host", HOST]))
    ChatStreamUser.host = HOST
    made: list[ChatStreamUser] = []

    def spawn() -> None:
        while True:
            made.append(ChatStreamUser(env))

    g = gevent.spawn(spawn)
    gevent.sleep(0)  # it runs until it yields (without the batches it never would)
    g.kill(block=True)  # a new spawn message, as Locust's WorkerRunner handles it
    assert g.dead and g.successful() and made  # GreenletExit, caught by the kill
    assert all(hasattr(u, "recorder") for u in made)
