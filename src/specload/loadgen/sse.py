"""Incremental Server-Sent Events decoder: bytes in, complete events out, no I/O.

Follows the WHATWG event-stream rules that matter for OpenAI-compatible streams: lines
end in LF, CRLF or a lone CR (also when a CR and its LF arrive in different reads);
lines starting with ":" are comments; `data` fields of one event are joined with "\\n";
a blank line dispatches the event; an event without data is dropped. Input may be split
at any byte. The caller decides what `[DONE]` means; `finish()` hands back an event
whose closing blank line never came, because some servers end the stream that way.
"""

from __future__ import annotations

from typing import NamedTuple


class SSEEvent(NamedTuple):
    """One dispatched event: its joined data (bytes), and the `event` field if any."""

    data: bytes
    event: str | None = None


class SSEDecoder:
    """Feed bytes as they arrive; get back every event they complete."""

    __slots__ = ("_buf", "_data", "_event", "_skip_lf")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._data: list[bytes] = []
        self._event: str | None = None
        self._skip_lf = False  # the previous input ended in CR; a leading LF belongs to it

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume `chunk`; return the events completed by it, in order."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return []
        buf = self._buf
        if not buf and b"\r" not in chunk:
            lf = chunk.find(b"\n")
            if lf == len(chunk) - 1:
                # fast path: exactly one LF-terminated line, as a line reader gives
                event = self._line(chunk[:-1])
                return [event] if event is not None else []
            data = self.whole_event_data(chunk)
            if data is not None:
                return [SSEEvent(data)]
        buf += chunk
        events: list[SSEEvent] = []
        pos = 0
        size = len(buf)
        while pos < size:
            lf = buf.find(b"\n", pos)
            cr = buf.find(b"\r", pos, lf if lf >= 0 else size)
            if cr >= 0:
                end = cr
                if cr + 1 < size:
                    nxt = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
                else:
                    nxt = cr + 1
                    self._skip_lf = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            event = self._line(bytes(buf[pos:end]))
            if event is not None:
                events.append(event)
            pos = nxt
        del buf[:pos]
        return events

    def whole_event_data(self, chunk: bytes) -> bytes | None:
        """The data of `chunk` when it is one whole event of one `data` line and nothing
        is pending (the shape servers send each event in), as `feed` would give it with
        no `event` field; else None (and nothing consumed: `feed` it)."""
        if (chunk.startswith(b"data:") and chunk.find(b"\n") == len(chunk) - 2
                and chunk[-1] == 0x0A and not self._buf and not self._data
                and not self._skip_lf and self._event is None and b"\r" not in chunk):
            return chunk[6:-2] if chunk[5:6] == b" " else chunk[5:-2]
        return None

    def finish(self) -> SSEEvent | None:
        """End of stream: the event still being built (plus any unterminated line), if any."""
        if self._buf:
            self._line(bytes(self._buf))
            self._buf.clear()
        return self._dispatch()

    def _line(self, line: bytes) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == 0x3A:  # ":" comment
            return None
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name = line[:colon]
            value = line[colon + 2 :] if line[colon + 1 : colon + 2] == b" " else line[colon + 1 :]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], None
        if not data:
            return None
        return SSEEvent(data[0] if len(data) == 1 else b"\n".join(data), event)
