"""The real llama-server, replying with tool calls: every token counted, and the same
replies with speculation as without.

Gemma 3 270M's own chat template has no tools, so both servers get a Hermes-style one
(`TEMPLATE`, the shape llama.cpp's tool-call parser reads: `<tool_call>` JSON in the
assistant's turn), and every prompt ends with the assistant's turn begun: `<tool_call>`
and the call's opening, `{"name": "get_weather", "arguments": {"city": "Oslo", "notes":
"`. llama-server continues it (`continue_final_message`), parses the call as it grows and
streams the model's tokens as `delta.tool_calls[].function.arguments` fragments (its
`common_chat_msg_diff_to_json_oaicompat`), the request's `tools` sent in
`request.extra_body`. A 270M model does not call tools by itself, and left alone it soon
closes the JSON wrongly (llama-server then ends the stream with "does not match the
expected peg-native format"); the request bans the tokens that hold a quote or a brace
(`logit_bias`) and stops at a quote (`stop`), so the reply stays inside the notes: a
real tool-call stream all the same (a custom `grammar` is refused with tools). The
spec-on server drafts from n-grams of the context and verifies them for real (no
`--spec-synth-len`): greedy, it should return what the plain server returns. Ladder 1/4,
two repeats (the second gives the spec-off arm's own floor).
What must hold:
- every request succeeds, its tokens from `usage`, its first token a tool-call chunk (a
  reader that counts only `content` has no TTFT here), every token its own chunk as
  llama-server streams them (but the stop string's, which `usage` counts and the stream
  leaves out), and the reply's text the call's name and arguments;
- at every `/metrics` sample before the run's end, `llamacpp:tokens_predicted_total`
  holds the tokens of the requests that had ended, give or take those ending within the
  fetch and one decode step of it;
- the report compares the two arms' replies at every rung and the spec-off arm with
  itself across repeats; what it finds is printed (docs/real-engines.md keeps it), and
  the counts are the ones the request files give.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specload.runfiles.records import FETCH_METRIC
from tests.support import llama_server
from tests.support.parity_counts import assert_reported
from tests.support.sweeps import read_csv, run_dir_of, run_sweep

pytestmark = [pytest.mark.real, pytest.mark.untimed, pytest.mark.timeout(900)]

TEMPLATE = """{%- if tools %}<|im_start|>system
You may call one or more functions. Function signatures within <tools></tools>:
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>
For each function call, return a json object with function name and arguments within \
<tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% endif %}
{%- for message in messages -%}
{%- if message.role == "assistant" and message.tool_calls -%}
<|im_start|>assistant
{%- if message.content %}
{{ message.content }}{% endif %}
{%- for tool_call in message.tool_calls %}
<tool_call>
{"name": "{{ tool_call.function.name }}", "arguments": {{ tool_call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == "tool" -%}
<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif -%}
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}
"""
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "notes": {"type": "string"}},
                   "required": ["city"]}}}
OPENING = '<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{city}", "notes": "'
# tokens that would close the notes' string or the call's JSON (each string's tokens)
QUOTES = ('"', '",', '".', '"}', '" ', ' "', '":', '"\n', '"?', '"!', '")', '",\n', '"]',
          '"}}', '"},', '\\"', "}")
CITIES = ("Paris", "Lima", "Oslo", "Cairo", "Hanoi", "Quito", "Perth", "Dakar", "Riga",
          "Lagos", "Sofia", "Tunis", "Porto", "Accra", "Kyoto", "Minsk", "Turin", "Basra",
          "Bergen", "Split", "Cork", "Nice", "Graz", "Pune")
LADDER = (1, 4)
MAX_TOKENS = 32
SLOTS = 4
EDGE_S = 0.25  # a request ending this close to a sample may fall on either side of it


def _prompts(path: Path) -> Path:
    lines = [json.dumps({"category": "tool_call", "messages": [
        {"role": "user", "content": f"Describe the weather in {city} today in detail."},
        {"role": "assistant", "content": OPENING.format(city=city)}]}) for city in CITIES]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _arm(name: str, spec: str, template: Path) -> dict:
    port = llama_server.free_port()
    flags = f'--chat-template-file "{template}" {spec}'.strip()
    return {"name": name, "spec": "on" if spec else "off", "engine": "llamacpp",
            "command": {"start": llama_server.server_command(
                port, SLOTS, flags, threads=llama_server.PLACED_THREADS),
                "base_url": f"http://127.0.0.1:{port}", "ready_timeout_s": 120}}


@pytest.fixture(scope="module")
def replies_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("llamacpp-replies")
    template = folder / "hermes.jinja"
    template.write_text(TEMPLATE, encoding="utf-8")
    spec = ("--spec-type ngram-simple --spec-ngram-simple-size-n 1 "
            "--spec-ngram-simple-size-m 4 --spec-draft-n-max 4")
    scenario = {
        "name": "llamacpp-replies", "ladder": list(LADDER), "warmup_s": 2, "measure_s": 8,
        "min_requests": 8, "repeats": 2, "placement": "apart",
        "request": {"max_tokens": MAX_TOKENS, "ignore_eos": True, "temperature": 0,
                    "prompts": str(_prompts(folder / "tool-calls.jsonl")),
                    "extra_body": {"tools": [TOOL], "stop": ['"'],
                                   "logit_bias": [[q, False] for q in QUOTES]},
                    "keep_replies": True,
                    "request_timeout_s": 60},
        "arms": [_arm("spec-on", spec, template), _arm("spec-off", "", template)]}
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    done = run_sweep(folder, str(path), timeout=800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / run_dir_of(done.stdout), done.stdout


def _requests(run: Path, arm: str) -> list[dict[str, str]]:
    return [r for rep in sorted((run / arm).glob("rep-*"))
            for r in read_csv(rep / "locust_requests.csv")]


@pytest.mark.parametrize("arm", ["spec-on", "spec-off"])
def test_every_tool_call_token_is_a_chunk_and_usage_counts_them(replies_run, arm) -> None:
    run, _ = replies_run
    rows = [r for r in _requests(run, arm) if r["error_kind"] != "interrupted"]
    assert len(rows) >= 20 and {r["error_kind"] for r in rows} == {""}
    for r in rows:
        tokens, chunks = int(r["output_tokens"]), int(r["num_chunks"])
        assert r["tokens_source"] == "usage" and r["ttft_ms"] and tokens > 4, r
        stopped = r["finish_reason"] != "length"  # at the stop string: tokens < MAX_TOKENS
        assert tokens - stopped <= chunks <= tokens and (stopped or tokens == MAX_TOKENS), r
        assert r["reply_text"].startswith('get_weather{"city": "'), r["reply_text"]


@pytest.mark.parametrize("arm", ["spec-on", "spec-off"])
def test_the_servers_token_counter_holds_what_the_requests_counted(replies_run, arm) -> None:
    run, _ = replies_run
    for rep in sorted((run / arm).glob("rep-*")):
        rows = read_csv(rep / "locust_requests.csv")
        ended = [(float(r["end"]), int(r["output_tokens"])) for r in rows
                 if r["error_kind"] == ""]
        last = float(read_csv(rep / "locust_rungs.csv")[-1]["measure_end"])
        samples: dict[float, dict[str, float]] = {}
        for s in read_csv(rep / "locust_server_metrics.csv"):
            samples.setdefault(float(s["ts"]), {})[s["metric"]] = float(s["value"])
        checked = 0
        for ts, got in sorted(samples.items()):
            if ts >= last:  # the users stop after it: their cut requests count too
                break
            edge = got[FETCH_METRIC] / 2 + EDGE_S
            surely = sum(n for end, n in ended if end <= ts - edge)
            maybe = sum(n for end, n in ended if end <= ts + edge)
            assert surely <= got["llamacpp:tokens_predicted_total"] <= maybe, (ts, surely, maybe)
            checked += 1
        assert checked >= 10


def test_the_report_compares_the_replies_at_every_rung(replies_run) -> None:
    run, stdout = replies_run
    for line in assert_reported(run, LADDER):
        print(line)
    floor = json.loads((run / "summary.json").read_text())["parity"]["floor"]
    assert floor["compared"] >= 5, floor  # the repeats sent the same prompts
    assert "replies against spec-off" in stdout
