"""specload's custom Locust arguments, registered on `events.init_command_line_parser`.

Importing this module registers them (the user modules import it): Locust parses them
and the web UI shows them. `locust -f locustfiles/chat.py --help` cannot list them:
Locust 2.47 prints its help before it imports the locustfile (argument_parser.py,
`parse_locustfile_option` runs `get_parser().parse_args()` on -h, and main.py imports
locustfiles only after it; locustio/locust#2917 was closed unfixed), and nothing of a
project runs before that short of an interpreter-wide startup hook. So each locustfile
prints the whole help itself: `python locustfiles/chat.py --help` (`print_locust_help`).
Locust sends custom arguments to workers in spawn messages (MasterRunner.start puts
`parsed_options` in each spawn message), so code reads them through
`RunOptions.from_env` at test start or task time, never at import or init.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, fields
from typing import TypeVar

from locust import events
from locust.env import Environment

from specload import api_key
from specload.workload import LengthError, LengthSpec

DEFAULT_MAX_TOKENS = 256
DEFAULT_REQUEST_TIMEOUT_S = 300.0
DEFAULT_FAILURE_BACKOFF_S = 2.0
DEFAULT_REQUEST_ID_HEADER = "X-Request-Id"


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    # The web UI and a --master listen on loopback unless asked otherwise (--web-host,
    # --master-bind-host): a load generator's UI must not be open to the network.
    parser.set_defaults(web_host="127.0.0.1", master_bind_host="127.0.0.1")
    # on the parser itself: only LocustArgumentParser.add_argument knows include_in_web_ui
    group = parser
    group.add_argument("--model", default="", include_in_web_ui=True,
                       help="model id to request (default: first id from /v1/models)")
    group.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                       include_in_web_ui=True,
                       help="max_tokens per request unless the prompt file sets one")
    group.add_argument("--ignore-eos", action="store_true", default=False,
                       include_in_web_ui=True,
                       help="ask the server to ignore EOS so every request runs to max_tokens")
    group.add_argument("--min-tokens", type=int, default=0, include_in_web_ui=True,
                       help="min_tokens to request (0: not sent)")
    group.add_argument("--temperature", type=float, default=0.0, include_in_web_ui=True,
                       help="sampling temperature")
    group.add_argument("--prompts", default="", include_in_web_ui=True,
                       help="prompt file: ShareGPT .json or .jsonl (default: built-in set)")
    group.add_argument("--prompt-tokens", default="", include_in_web_ui=True,
                       help="synthetic prompts of this many tokens: N, uniform:LO:HI, "
                       "normal:MEAN:SD or lognormal:MEAN:SIGMA (default: the prompt set's)")
    group.add_argument("--output-tokens", default="", include_in_web_ui=True,
                       help="max_tokens per request drawn like --prompt-tokens "
                       "(default: --max-tokens)")
    group.add_argument("--shared-prefix-tokens", type=int, default=0, include_in_web_ui=True,
                       help="synthetic prompts: a system prompt of this many tokens, the same "
                       "for every request (prefix caching)")
    group.add_argument("--seed", type=int, default=0, include_in_web_ui=True,
                       help="seed for the prompt order and the request `seed` field")
    group.add_argument("--api-key-env", default=api_key.DEFAULT_ENV, include_in_web_ui=True,
                       help="environment variable holding the API key (sent as Bearer)")
    group.add_argument("--request-timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT_S,
                       include_in_web_ui=True,
                       help="seconds to wait for the first byte and between chunks")
    group.add_argument("--failure-backoff", type=float, default=DEFAULT_FAILURE_BACKOFF_S,
                       include_in_web_ui=True,
                       help="after a failed request a user waits 0.1 s, doubling up to this "
                       "many seconds, until a request succeeds (0: no waiting)")
    group.add_argument("--request-id-header", default=DEFAULT_REQUEST_ID_HEADER,
                       include_in_web_ui=True,
                       help="header carrying each request's UUID ('off': send none)")
    group.add_argument("--ca-bundle", default="", include_in_web_ui=True,
                       help="HTTPS: CA certificates to trust (default: the system's, "
                       "SSL_CERT_FILE honoured)")
    group.add_argument("--insecure", action="store_true", default=False,
                       include_in_web_ui=True,
                       help="HTTPS: do not verify the server's certificate")
    group.add_argument("--continuous-usage", action=argparse.BooleanOptionalAction,
                       default=True, include_in_web_ui=True,
                       help="ask for per-chunk usage (continuous_usage_stats) so token "
                       "ITL is exact")
    group.add_argument("--records", action=argparse.BooleanOptionalAction, default=True,
                       include_in_web_ui=True,
                       help="write one row per request to <csv prefix>_requests.csv")


T = TypeVar("T")


def read_options(cls: type[T], environment: Environment) -> T:
    """An options dataclass from Locust's parsed options (defaults for anything absent)."""
    parsed = environment.parsed_options
    if parsed is None:
        return cls()
    names = (f.name for f in fields(cls))  # type: ignore[arg-type]
    return cls(**{name: getattr(parsed, name) for name in names if hasattr(parsed, name)})


def print_locust_help() -> None:
    """Locust's --help with every option registered so far (specload's included)."""
    from locust.argument_parser import get_parser  # builds a parser, firing our listeners

    get_parser().print_help()


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The values of specload's arguments for one run."""

    model: str = ""
    max_tokens: int = DEFAULT_MAX_TOKENS
    ignore_eos: bool = False
    min_tokens: int = 0
    temperature: float = 0.0
    prompts: str = ""
    prompt_tokens: str = ""
    output_tokens: str = ""
    shared_prefix_tokens: int = 0
    seed: int = 0
    api_key_env: str = api_key.DEFAULT_ENV
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S
    failure_backoff: float = DEFAULT_FAILURE_BACKOFF_S
    request_id_header: str = DEFAULT_REQUEST_ID_HEADER
    ca_bundle: str = ""
    insecure: bool = False
    continuous_usage: bool = True
    records: bool = True

    @classmethod
    def from_env(cls, environment: Environment, check: bool = True) -> RunOptions:
        """Read the current values (defaults for anything absent, e.g. in a bare Environment).

        With `check`, values no server would accept raise ValueError (one-line message).
        """
        opts = read_options(cls, environment)
        if check:
            opts.validate()
        return opts

    def validate(self) -> None:
        """Raise ValueError with a one-line message for values no server would accept."""
        if self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be >= 1, got {self.max_tokens}")
        if self.min_tokens < 0:
            raise ValueError(f"--min-tokens must be >= 0, got {self.min_tokens}")
        if self.request_timeout <= 0:
            raise ValueError(f"--request-timeout must be > 0, got {self.request_timeout}")
        if self.temperature < 0:
            raise ValueError(f"--temperature must be >= 0, got {self.temperature}")
        if self.failure_backoff < 0:
            raise ValueError(f"--failure-backoff must be >= 0, got {self.failure_backoff}")
        if self.ca_bundle and not os.path.isfile(self.ca_bundle):
            raise ValueError(f"--ca-bundle {self.ca_bundle}: no such file")
        for flag, spec in (("--prompt-tokens", self.prompt_tokens),
                           ("--output-tokens", self.output_tokens)):
            if spec:
                try:
                    LengthSpec.parse(spec)
                except LengthError as exc:
                    raise ValueError(f"{flag} {exc}") from None
        if self.shared_prefix_tokens < 0:
            raise ValueError(f"--shared-prefix-tokens must be >= 0, got "
                             f"{self.shared_prefix_tokens}")


def install() -> None:
    """Hook this module into Locust's events (once, from `plugin.install`)."""
    events.init_command_line_parser.add_listener(_add_arguments)
