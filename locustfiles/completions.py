"""Locustfile: streaming `/v1/completions` users (same options and records as chat.py).

    locust -f locustfiles/completions.py --host http://127.0.0.1:8000
    python locustfiles/completions.py --help     # every option, specload's too
"""

from specload.loadgen import plugin
from specload.loadgen.options import print_locust_help
from specload.loadgen.users import CompletionStreamUser

plugin.install()

__all__ = ["CompletionStreamUser"]

if __name__ == "__main__":
    print_locust_help()
