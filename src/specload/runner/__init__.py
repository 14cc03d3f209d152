"""The sweep runner: the only part of specload that starts and stops processes.

It starts each arm's server, samples its /metrics, runs Locust through the ladder and
records everything in a run folder with a manifest; it never imports Locust itself.
"""
