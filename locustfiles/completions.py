"""Locustfile: streaming `/v1/completions` users (same options and records as chat.py).

    locust -f locustfiles/completions.py --host http://127.0.0.1:8000
"""

from specload.loadgen.users import CompletionStreamUser

__all__ = ["CompletionStreamUser"]
