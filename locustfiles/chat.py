"""Locustfile: streaming chat users against an OpenAI-compatible server.

    locust -f locustfiles/chat.py --host http://127.0.0.1:8000
    locust -f locustfiles/chat.py --headless -u 10 -r 10 -t 60s --csv out/run --host URL

You choose the user count (= concurrent requests). specload's options (`--model`,
`--max-tokens`, `--ignore-eos`, `--prompts`, ...) are listed by `--help` and shown in
the web UI; per-request rows go to `<csv prefix>_requests.csv`.
"""

from specload.loadgen.users import ChatStreamUser

__all__ = ["ChatStreamUser"]
