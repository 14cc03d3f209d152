"""Locustfile: streaming chat users against an OpenAI-compatible server.

    locust -f locustfiles/chat.py --host http://127.0.0.1:8000
    locust -f locustfiles/chat.py --headless -u 10 -r 10 -t 60s --csv out/run --host URL

You choose the user count (= concurrent requests). specload's options (`--model`,
`--max-tokens`, `--ignore-eos`, `--prompts`, ...) are shown in the web UI, and listed
with Locust's by `python locustfiles/chat.py --help` (Locust prints `--help` before it
imports a locustfile, so `locust -f ... --help` cannot list them); per-request rows go
to `<csv prefix>_requests.csv`; the web UI's Tokens tab shows tokens per second live.
A locustfile of your own imports the users and calls `plugin.install()`, as this one
does: importing them changes nothing in Locust, so without it Locust knows none of
specload's options ("unrecognized arguments: --max-tokens").
"""

from specload.loadgen import plugin
from specload.loadgen.options import print_locust_help
from specload.loadgen.users import ChatStreamUser

plugin.install()

__all__ = ["ChatStreamUser"]

if __name__ == "__main__":
    print_locust_help()
