"""How each engine streams a reply that calls a tool: `delta.tool_calls`, in its shape.

A simulated reply to a request offering `tools` (and a `tool_choice` other than none)
calls the first tool offered, or the one `tool_choice` names: its tokens become the
call's `arguments`, a JSON object whose one string value holds the generated text. Each
flavour sends the call as its engine does (`flavors.Flavor.tool_calls`, read from the
engines' sources as noted there): the first delta carries the call's index, id, type
and function name, with `"arguments": ""` or none; later deltas carry argument fragments
and whatever fields the engine repeats (SGLang: a null id and name; TGI: its id and
type, a null name); SGLang writes the delta's other fields as nulls, Ollama an empty
content beside the call; Ollama sends the
whole call in one chunk once it is complete. A reply that called ends with the engine's
finish reason for it ("tool_calls"; TGI keeps "stop"; vLLM keeps "stop" when
`tool_choice` named the function).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

ARGUMENTS_OPEN = '{"input": "'
ARGUMENTS_CLOSE = '"}'


@dataclass(frozen=True, slots=True)
class ToolCallWire:
    """One engine's shape of a streamed tool call."""

    id_prefix: str  # the call id's prefix (a hex digest of the request follows)
    # the first delta carries `"arguments"` even before any (else only with a fragment)
    first_arguments: bool = False
    repeat_id_type: bool = False  # later deltas repeat the id and type (TGI)
    null_name_id: bool = False  # later deltas carry `"id": null` and `"name": null`
    # the delta's other fields as the engine writes them beside a call (SGLang: nulls;
    # Ollama: an empty content)
    delta_fields: tuple[tuple[str, Any], ...] = ()
    whole: bool = False  # the call comes whole, in one chunk, once complete (Ollama)
    finish: str | None = "tool_calls"  # a called reply's finish reason (None: as it ended)
    named_keeps_stop: bool = False  # a named `tool_choice` ends with "stop" (vLLM)


class ToolCallStream:
    """One request's call, its deltas built fragment by fragment."""

    __slots__ = ("_first", "_id", "name", "wire")

    def __init__(self, wire: ToolCallWire, name: str, request_id: str) -> None:
        self.wire = wire
        self.name = name
        self._id = f"{wire.id_prefix}{zlib.crc32(request_id.encode()):08x}"
        self._first = True

    def finish(self, reason: str, named: bool) -> str:
        """The finish reason a called reply ends with, given how the engine ended it."""
        wire = self.wire
        if reason != "stop" or wire.finish is None or (named and wire.named_keeps_stop):
            return reason
        return wire.finish

    def delta(self, fragment: str, last: bool) -> dict[str, Any]:
        """The delta carrying the next fragment of the arguments (the closing of the
        JSON object with the last one)."""
        wire = self.wire
        if self._first:
            fragment = ARGUMENTS_OPEN + fragment
        if last:
            fragment += ARGUMENTS_CLOSE
        call: dict[str, Any] = {"index": 0}
        function: dict[str, Any] = {}
        if self._first or wire.repeat_id_type:
            call |= {"id": self._id, "type": "function"}
        if self._first:
            function["name"] = self.name
        elif wire.null_name_id:
            call |= {"id": None, "type": "function"}
            function["name"] = None
        elif wire.repeat_id_type:
            function["name"] = None
        if fragment or not self._first or wire.first_arguments:
            function["arguments"] = fragment
        call["function"] = function
        self._first = False
        return {**dict(wire.delta_fields), "tool_calls": [call]}
