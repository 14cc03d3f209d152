"""The simulated inference server: continuous batching and speculative decoding on a
roofline cost model, behind an OpenAI-compatible HTTP API.

An island inside specload: it imports nothing else from the package. `profile` reads a
hardware/model/drafter YAML, `scheduler` forms batches (KV capacity, chunked prefill,
preemption), `cost_model` prices a step, `acceptance` samples accepted drafts, `core`
ties them into one engine step, `engine` runs steps on the wall clock and `virtual` in
virtual time (`curve` prints that as `specload sim-curve`). `textgen` makes the
deterministic text, `openai_request` validates bodies, `sse` frames chunks, `faults`
injects failures, `trace` writes the ground-truth log, `metrics` the Prometheus text,
`api` and `server` put it on the network, and `probe` is a small client to measure it.
"""


class SimConfigError(ValueError):
    """A bad profile, fault spec or option: printed as one line by the CLI entry points."""
