"""The Locust side of specload: streaming users, SSE decoding, per-request records, the ladder.

Modules here are imported only inside Locust processes (locustfiles and the runner's
Locust subprocesses); the report never imports them.
"""
