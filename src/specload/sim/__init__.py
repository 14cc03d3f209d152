"""The simulated inference server: continuous batching and speculative decoding on a
roofline cost model, behind an OpenAI-compatible HTTP API.

An island inside specload: it imports nothing else from the package, so it can be
reasoned about (and replaced by a real server) on its own. `profile` describes the
hardware and model, `scheduler` forms batches, `cost_model` prices a step, `core` ties
them into one engine step, `engine` runs steps in real time and `virtual` in virtual
time for `specload sim-curve`; `api` and `server` put it on the network.
"""

class SimConfigError(ValueError):
    """A bad profile, fault spec or option: printed as one line by the CLI entry points."""
