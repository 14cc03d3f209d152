"""HTTP/1.1 chunked transfer coding, read only where a read holds whole chunks: pure, no I/O.

Streaming servers write each SSE event as one chunk (size in hex, CRLF, the event,
CRLF), and a read of the stream usually takes exactly one. For such a read,
`whole_chunks` gives the payloads, so the reader can hand them on without passing the
bytes through the HTTP parser (`reader._Pump`); anything else — a chunk cut between
two reads, a chunk extension, the last chunk that ends the body, an event cut between
two chunks — is None, and that read and the rest of the response go to the parser.
That is only sound while the parser stands between two chunks: `head_ends_between_chunks`
says whether the bytes a response's head came in with left it there.
"""

from __future__ import annotations

import string

_HEX = string.hexdigits.encode()
_SIZE_LINE_MAX = 18  # 16 hex digits (llhttp's limit, a 64-bit size) and CRLF


def whole_chunks(data: bytes) -> list[bytes] | None:
    """The payloads of `data` when it is one or more whole chunks, each of whole lines
    (ending in LF) and none the last (size 0); else None."""
    payloads: list[bytes] = []
    pos, size = 0, len(data)
    while pos < size:
        crlf = data.find(b"\r\n", pos, pos + _SIZE_LINE_MAX)
        if crlf <= pos:
            return None
        field = data[pos:crlf]
        if field.translate(None, _HEX):  # not only hex digits: an extension, a sign, ...
            return None
        start = crlf + 2
        end = start + int(field, 16)
        if end == start or data[end:end + 2] != b"\r\n" or data[end - 1] != 0x0A:
            return None
        payloads.append(data[start:end])
        pos = end + 2
    return payloads or None


def head_ends_between_chunks(head: bytes, transfer_encoding: str | list[str] | None) -> bool:
    """Whether a chunked response whose head came in the reads `head` (joined, body bytes
    after it included) left its parser between two chunks of whole lines."""
    codings = transfer_encoding if isinstance(transfer_encoding, list) else [
        transfer_encoding or ""]
    if not any("chunked" in c.lower() for c in codings):
        return False
    end = head.find(b"\r\n\r\n")
    if end < 0 or head[9:10] == b"1":  # an interim (1xx) response's head came first
        return False
    body = head[end + 4:]
    return not body or whole_chunks(body) is not None
