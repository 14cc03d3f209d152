"""specload: find the concurrency at which speculative decoding stops paying off.

The package drives streaming chat clients (Locust users) through a concurrency ladder
against a spec-on and a spec-off OpenAI-compatible server, and turns the per-request
records into tokens/second curves, a speedup curve and the crossover concurrency C*.
"""

__version__ = "0.1.0"
