"""The reader's CPU per chunk with whole chunks skipping the HTTP parser, and without.

One process streams SSE events over loopback TCP into `LineReader.pump`, one event per
HTTP chunk and one chunk per read: the pump's `on_lines` sends the next chunk, so each
read finds exactly one. Blocks of `--chunks` chunks (one response each) alternate
between the two ways of reading (the skip on, and off as for a response whose head left
the parser mid-chunk), so both see the same machine; it prints the CPU per chunk of
each way (median over the blocks) and the median of the blocks' paired ratios. The
sending is in the figures, the same for both; `bench_loadgen.py` measures whole clients.

    python scripts/bench_reader.py [--blocks 20] [--chunks 2000]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time

from gevent import socket as gsocket

from specload.loadgen.http_post import HeadKeepingResponse
from specload.loadgen.reader import LineReader

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
# a vLLM-shaped chunk with continuous usage, as the simulator sends them
EVENT = (b'data: {"id":"chatcmpl-0","object":"chat.completion.chunk","created":1,"model":"m",'
         b'"choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,'
         b'"finish_reason":null}],"usage":{"prompt_tokens":8,"total_tokens":9,'
         b'"completion_tokens":1}}\n\n')
CHUNK = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
END = b"%x\r\n%s\r\n0\r\n\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n")


def one_block(chunks: int, skip: bool) -> float:
    """CPU seconds per chunk of one response of `chunks` chunks."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = gsocket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    with client, server:
        server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.settimeout(10.0)
        server.sendall(HEAD)
        raw = HeadKeepingResponse(client, None)
        if not skip:
            raw.head_bytes = b""  # as if the head were not known: no read skips the parser
        reader = LineReader(raw)
        left = [chunks]

        def on_lines(lines: bytes, stamp: float) -> bool:
            if lines.startswith(b"data: [DONE]"):
                return True
            left[0] -= 1
            server.sendall(CHUNK if left[0] else END)
            return False

        server.sendall(CHUNK)
        started = time.process_time()
        reader.pump(on_lines)
        return (time.process_time() - started) / chunks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=20, help="blocks each way, alternating")
    ap.add_argument("--chunks", type=int, default=2000, help="chunks per block")
    args = ap.parse_args()
    one_block(200, True), one_block(200, False)  # warm up both ways
    skip: list[float] = []
    parse: list[float] = []
    for i in range(args.blocks):
        for way in ((True, False) if i % 2 else (False, True)):
            (skip if way else parse).append(one_block(args.chunks, way))
    ratios = [a / b for a, b in zip(skip, parse, strict=True)]
    print(f"# bench_reader: {args.blocks} blocks each way of {args.chunks} chunks, "
          f"{len(CHUNK)} bytes each, one per read")
    print(f"whole chunks past the parser: {statistics.median(skip) * 1e6:.2f} us/chunk")
    print(f"every read through the parser: {statistics.median(parse) * 1e6:.2f} us/chunk")
    print(f"ratio (median of the blocks' pairs): {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
