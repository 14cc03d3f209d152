"""Locustfile: chat sessions (multi-turn, think time) driven through the ladder.

    locust -f locustfiles/sessions.py --host http://127.0.0.1:8000 \
        --ladder 1,5,10,30 --think-time lognormal:5:0.8 --csv reports/manual/run

Each user holds one conversation at a time (`--conversations`, default the built-in
set), sends every turn with the whole history and waits `--think-time` after each
reply; the ladder counts sessions.
"""

from specload.loadgen.locustfile_sessions import ChatSessionUser, LadderShape

__all__ = ["ChatSessionUser", "LadderShape"]
