"""TGI (text-generation-inference): its registry entry and /metrics series.

No load switch (`--speculate` only); tokens appear only in per-request histograms,
counted when requests finish; one stream event per token; its context limits and chat
token count come from its router.
"""

from __future__ import annotations

import re

from specload.engines.entry import ContextWindow, Engine, Series

# TGI router/src: tokens only as per-request histograms, counted when requests finish
SERIES = (
    Series("tgi_batch_current_size", "running"),
    Series("tgi_queue_size", "waiting"),
    Series("tgi_request_success_total", "finished"),
    Series("tgi_request_generated_tokens_sum", "generated"),
)
ENGINE = Engine(
    # no load switch: `--speculate` only
    "tgi", "TGI", re.compile(r"\btext-generation-launcher\b|text-generation-inference"),
    sim_flavors=("tgi",), series=SERIES,
    histograms=("tgi_request_duration",),
    per_token_events=True,  # router/src/lib.rs: one StreamResponse per token
    # text-generation-inference @db931fc, router/src: GET /info lists `Info`'s
    # max_total_tokens and max_input_tokens (lib.rs); validation.rs `validate_input`
    # refuses input + max_new_tokens (at most DEFAULT_GENERATION_LENGTH, 1024) above
    # max_total_tokens and an input above max_input_tokens with a 422, cutting
    # nothing; POST /chat_tokenize templates a ChatRequest and answers
    # `ChatTokenizeResponse {tokenize_response: [SimpleToken], templated_text}`
    # (server.rs `get_chat_tokenize`), the same encoding the request is billed by
    context=ContextWindow(("max_total_tokens",), "/chat_tokenize", "tokenize_response",
                          listed_route="/info", input_limit=("max_input_tokens",)),
)
