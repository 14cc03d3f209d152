"""Arbitrary JSON bodies over HTTP never produce a 5xx or take the server down."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
# near-valid bodies; max_tokens stays small so valid ones finish quickly
bodies = json_values | st.fixed_dictionaries(
    {"max_tokens": st.integers(1, 8)},
    optional={"messages": json_values | st.just([{"role": "user", "content": "hi"}]),
              "prompt": json_values | st.just("hi"), "stream": json_values | st.booleans(),
              "stream_options": json_values, "model": json_values, "min_tokens": json_values,
              "ignore_eos": json_values, "seed": json_values, "n": json_values},
)


@pytest.fixture(scope="module")
def url(module_sim_server) -> str:
    return module_sim_server(trace=False).url


@pytest.mark.slow
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies, path=st.sampled_from(["/v1/chat/completions", "/v1/completions"]))
def test_fuzzed_bodies_get_2xx_or_4xx(url: str, body: object, path: str) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("POST", path, body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    assert resp.status < 500, payload
    if resp.status >= 400:
        assert set(json.loads(payload)["error"]) == {"message", "type", "param", "code"}
