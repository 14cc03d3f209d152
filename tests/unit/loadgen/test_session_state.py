"""A session's history: every turn holds the earlier turns and the replies received."""

from __future__ import annotations

from specload.loadgen.sessions import Session
from specload.traffic.conversations import Conversation


def test_each_turn_sends_the_history_with_the_replies() -> None:
    conv = Conversation(("one", "two", "three"), "chat", system="be brief")
    s = Session("id-1", conv, turns=2)
    first = s.prompt()
    assert first.messages == ({"role": "system", "content": "be brief"},
                              {"role": "user", "content": "one"})
    assert s.tags().turn == 1 and s.tags().session_id == "id-1"
    s.answered(" reply one")
    second = s.prompt()
    assert second.messages == (*first.messages, {"role": "assistant", "content": " reply one"},
                               {"role": "user", "content": "two"})
    assert s.tags(scheduled=5.0).turn == 2 and s.tags(scheduled=5.0).scheduled == 5.0
    assert not s.done
    s.answered(" reply two")
    assert s.done and second.category == "chat"
