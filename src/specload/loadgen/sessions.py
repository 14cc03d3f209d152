"""Chat sessions: users that hold multi-turn conversations and think between turns.

A `ChatSessionUser` is one person at a chat window. A session replays the user's side
of a conversation dealt by the process's `SessionDeck` (built-in set or ShareGPT file,
`--conversations`): every turn sends the whole history so far, with the replies the
server really streamed, and the reply it gets becomes part of the next turn. After
every reply the user thinks for a time drawn from `--think-time` (Locust's `wait_time`:
not a request, so never counted in flight), and a session ends after its turns
(`--turns`, at most the conversation's), when a turn fails (a person whose chat broke
starts a new one), or when the run ends. A new user first waits a random part of one
think time, so users added by a ladder rung arrive spread out, as people do. Records
carry the session id and the turn (1, 2, ...); the ladder steps the number of
sessions, and the batch the server sees is the requests in flight, which think time
keeps below it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gevent
from locust.env import Environment

from specload.loadgen.inflight import IN_FLIGHT
from specload.loadgen.process_state import EXTENSIONS, ProcessState
from specload.loadgen.users import ChatStreamUser, Reply, Tags
from specload.loadgen.workload_options import WorkloadOptions
from specload.traffic.conversations import Conversation, SessionDeck, load_conversations
from specload.traffic.prompts import Prompt


class Session:
    """One conversation in progress: its history and which turn comes next."""

    __slots__ = ("conversation", "id", "messages", "turn", "turns")

    def __init__(self, session_id: str, conversation: Conversation, turns: int) -> None:
        self.id = session_id
        self.conversation = conversation
        self.turns = turns
        self.turn = 0  # turns answered so far
        self.messages: list[dict[str, str]] = conversation.opening()

    @property
    def done(self) -> bool:
        return self.turn >= self.turns

    def prompt(self) -> Prompt:
        """The next turn's request: the history, then the user's next message."""
        ask = {"role": "user", "content": self.conversation.turns[self.turn]}
        return Prompt((*self.messages, ask), self.conversation.category,
                      index=self.conversation.index)

    def tags(self, **more: Any) -> Tags:
        return Tags(session_id=self.id, turn=self.turn + 1, **more)

    def answered(self, reply: str) -> None:
        """The turn's reply arrived: both messages join the history."""
        self.messages += [{"role": "user", "content": self.conversation.turns[self.turn]},
                          {"role": "assistant", "content": reply}]
        self.turn += 1


class SessionRunner:
    """What a session user does: start sessions and send their turns one at a time."""

    def __init__(self, user: ChatStreamUser) -> None:
        self.user = user
        self.session: Session | None = None
        self.started = 0

    def new_session(self, ctx: ProcessState) -> Session:
        deck = _deck(ctx)
        conversation, turns = deck.deal()
        self.started += 1
        session_id = f"{ctx.client_id}-{self.user.user_id}-{self.started}"
        return Session(session_id, conversation, turns)

    def turn(self, ctx: ProcessState, model: str, backoff_s: float = 0.0,
             **tags: Any) -> Reply:
        """Send the next turn (of a new session if none is open); end the session after
        its last turn or a failed one."""
        session = self.session = self.session or self.new_session(ctx)
        prompt = ctx.with_output_length(session.prompt())
        reply = self.user.stream(ctx, prompt, model, backoff_s, session.tags(**tags))
        if reply.ok:
            session.answered(reply.text)
        if session.done or not reply.ok:
            self.session = None
        return reply


class ChatSessionUser(ChatStreamUser):
    """A person holding chat sessions, one after another (see the module docstring)."""

    keep_text = True
    uses_sessions: ClassVar[bool] = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.sessions = SessionRunner(self)
        self._pause: float | None = None  # the think time after the latest reply

    def wait_time(self) -> float:
        return self._pause or 0.0

    def generate(self) -> None:
        ctx = self.ctx or self._setup()
        if self._pause is None:  # a new user arrives somewhere inside a think time
            self._pause = 0.0
            gevent.sleep(_deck(ctx).first_pause())
        IN_FLIGHT.park_while_draining()
        waited = self._backoff.wait()
        model = self.model(ctx)
        if model is None:
            return
        self.settle(self.sessions.turn(ctx, model, waited))
        self._pause = _deck(ctx).pause()


def _deck(ctx: ProcessState) -> SessionDeck:
    assert ctx.sessions is not None, "the context has no session deck"
    return ctx.sessions


def _attach_deck(ctx: ProcessState) -> None:
    """Give the context a session deck when a user class of the run holds sessions."""
    if not any(getattr(u, "uses_sessions", False) for u in ctx.env.user_classes):
        return
    opts = WorkloadOptions.from_env(ctx.env)
    index, count = ctx.share
    ctx.sessions = SessionDeck(load_conversations(opts.conversations), ctx.opts.seed,
                               opts.think(), opts.turn_limit(), index, count)


EXTENSIONS.append(_attach_deck)
