"""Test-wide setup: the fixtures of `tests.support` are available to every test.

Tests are in two tiers: the default `pytest` run (unit tests and quick integration
tests, a few minutes) and `pytest -m slow` (long end-to-end runs; CI runs both).
"""

pytest_plugins = ("tests.support.fixtures",)
