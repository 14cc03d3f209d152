"""Scenario validation: every problem reported at once, each with its key path and a hint."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from specload.config.scenario import load_scenario
from specload.errors import UserError

GOOD = """\
name: quick
ladder: [1, 2, 5]
warmup_s: 2
measure_s: 5
request: {max_tokens: 64, ignore_eos: true}
arms:
  - name: spec-on
    sim: {profile: seed-glm, spec: on, k: 3}
  - name: spec-off
    sim: {profile: seed-glm, spec: off}
"""

ARMS_TAIL = """\
arms:
  - name: a
    sim: {spec: on}
"""

INVALID = [
    ("unknown top-level key", "name: x\nladdr: [1, 2]\n" + ARMS_TAIL,
     ["laddr: unknown key"]),
    ("unknown key inside an arm", "name: x\narms:\n  - name: a\n    sim: {spec: on, kk: 3}\n",
     ["arms[0].sim.kk: unknown key"]),
    ("bad spec mode", "name: x\narms:\n  - name: a\n    sim: {spec: maybe}\n",
     ["arms[0].sim.spec: must be one of on, off, schedule"]),
    ("empty ladder", "name: x\nladder: []\n" + ARMS_TAIL, ["ladder: the ladder is empty"]),
    ("a context that is no length", "name: x\ncontexts: [512, lots]\n" + ARMS_TAIL,
     ["contexts: prompt length 'lots': expected a number"]),
    ("contexts with a bare on as a name", "name: x\ncontexts: [512, 2048]\n"
     "arms:\n  - name: on\n    sim: {spec: on}\n",
     ["arms[0].name: expected a text value, got True"]),
    ("a context twice", "name: x\ncontexts: [512, '512']\n" + ARMS_TAIL,
     ["contexts: the prompt lengths must differ"]),
    ("contexts with a prompt length", "name: x\ncontexts: [512, 2048]\n"
     "request: {prompt_tokens: 100}\n" + ARMS_TAIL,
     ["contexts set each arm's prompt length: leave out request.prompt_tokens"]),
    ("contexts with chat sessions", "name: x\ncontexts: [512, 2048]\n"
     "workload: {kind: sessions}\n" + ARMS_TAIL, ["contexts vary synthetic prompts of kind users"]),
    ("non-increasing ladder", "name: x\nladder: [1, 5, 5, 2]\n" + ARMS_TAIL,
     ["ladder: rung 2: the ladder must increase, but 5 follows 5",
      "rung 3: the ladder must increase, but 2 follows 5"]),
    ("zero users", "name: x\nladder: [0, 2]\n" + ARMS_TAIL,
     ["ladder: rung 0: user count 0 must be at least 1"]),
    ("text in ladder", "name: x\nladder: [1, lots]\n" + ARMS_TAIL,
     ["ladder: rung 1: user count 'lots' is not a whole number"]),
    ("wrong type", "name: x\nwarmup_s: soon\n" + ARMS_TAIL, ["warmup_s: expected a number"]),
    ("zero measure window", "name: x\nmeasure_s: 0\n" + ARMS_TAIL,
     ["measure_s: must be more than 0, got 0"]),
    ("duplicate arm names", "name: x\narms:\n  - name: a\n    sim: {spec: on}\n"
     "  - name: a\n    sim: {spec: off}\n",
     ["arms[1].name: duplicate arm name 'a' (also arms[0])"]),
    ("missing server", "name: x\narms:\n  - name: a\n",
     ["arms[0]: an arm needs exactly one server: `sim`, `command` or `url` (got none)"]),
    ("two servers", "name: x\narms:\n  - name: a\n    url: http://h:1\n    sim: {spec: on}\n",
     ["arms[0]: an arm needs exactly one server", "(got sim and url)"]),
    ("bad URL", "name: x\narms:\n  - name: a\n    url: localhost:8000\n",
     ["arms[0].url: 'localhost:8000' is not an http(s) URL; write it like http://"]),
    ("missing prompt file", "name: x\nrequest: {prompts: nope.jsonl}\n" + ARMS_TAIL,
     ["request.prompts: prompts file 'nope.jsonl' not found"]),
    ("unknown profile", "name: x\narms:\n  - name: a\n    sim: {profile: a100, spec: on}\n",
     ["arms[0].sim.profile: unknown profile 'a100'; use one of a100x8-llama8b-magicdec, "
      "bench-20ms, cpu2-gemma3-270m-ngram, h100-llama8b-eagle"]),
    ("unreadable profile path", "name: x\narms:\n  - name: a\n"
     "    sim: {profile: missing/gpu.yaml, spec: on}\n",
     ["arms[0].sim.profile: profile file 'missing/gpu.yaml' not found"]),
    ("missing arms", "name: x\n", ["arms: required key is missing"]),
    ("empty arms", "name: x\narms: []\n", ["arms: must not be empty"]),
    ("missing spec", "name: x\narms:\n  - name: a\n    sim: {profile: seed-glm}\n",
     ["arms[0].sim.spec: required key is missing"]),
    ("arm name with a slash", "name: x\narms:\n  - name: a/b\n    sim: {spec: on}\n",
     ["arms[0].name: arm name 'a/b' must be 1-64 letters"]),
    ("bare on as a name", "name: x\narms:\n  - name: on\n    sim: {spec: on}\n",
     ["arms[0].name: expected a text value, got True", "put the value in quotes"]),
    ("api key in place of its variable name", "name: x\nrequest: {api_key_env: sk-abc123}\n"
     + ARMS_TAIL, ["request.api_key_env: 'sk-abc123' is not an environment variable name"]),
    ("min above max tokens", "name: x\nrequest: {max_tokens: 10, min_tokens: 20}\n" + ARMS_TAIL,
     ["request: min_tokens (20) is larger than max_tokens (10)"]),
    ("bad fault", "name: x\narms:\n  - name: a\n    sim: {spec: on, faults: [cut]}\n",
     ["arms[0].sim.faults: fault 'cut' must look like KIND:FRACTION[:PARAM]"]),
    ("processes and distributed", "name: x\nprocesses: 4\ndistributed: {workers: 2}\n"
     + ARMS_TAIL, ["give either `processes` (one machine) or `distributed`"]),
    ("tie-break without repeats", "name: x\ntiebreak_repeats: 1\n" + ARMS_TAIL,
     ["tiebreak_repeats (1) breaks ties between repeats: set repeats to 2 or more (it is 1)"]),
    ("bad command readiness URL", "name: x\narms:\n  - name: a\n    command: {start: 'run',"
     " base_url: 'http://h:1', ready_url: 'h:1/health'}\n",
     ["arms[0].command.ready_url: 'h:1/health' is not an http(s) URL"]),
    ("top level not a mapping", "- just\n- a list\n", ["the top level must be a mapping"]),
    ("unknown engine", "name: x\narms:\n  - name: a\n    engine: vllmm\n    url: http://h:1\n",
     ["arms[0].engine: must be one of vllm, sglang, trtllm, tgi, llamacpp, ollama, other"]),
    ("empty slo", "name: x\nslo: {}\n" + ARMS_TAIL,
     ["slo: give ttft_p99_ms, tpot_p99_ms or both (milliseconds)"]),
    ("zero slo bound", "name: x\nslo: {ttft_p99_ms: 0}\n" + ARMS_TAIL,
     ["slo.ttft_p99_ms: must be more than 0, got 0"]),
    ("misspelt slo key", "name: x\nslo: {ttft_ms: 500}\n" + ARMS_TAIL,
     ["slo.ttft_ms: unknown key"]),
    ("two metrics sources", "name: x\narms:\n  - name: a\n    url: http://h:1\n"
     "    metrics_url: http://h:1/metrics\n    prometheus: {url: 'http://p:9090'}\n",
     ["arms[0]: metrics_url and prometheus both say where its series are: give one"]),
    ("a replica's bad metrics URL", "name: x\narms:\n  - name: a\n    url: http://h:1\n"
     "    metrics_url: [http://r0:8000/metrics, r1:8000/metrics]\n",
     ["arms[0].metrics_url: 'r1:8000/metrics' is not an http(s) URL"]),
    ("no metrics URL in a list", "name: x\narms:\n  - name: a\n    url: http://h:1\n"
     "    metrics_url: []\n", ["arms[0]: metrics_url: an empty list"]),
    ("Prometheus without its URL", "name: x\narms:\n  - name: a\n    url: http://h:1\n"
     "    prometheus: {selector: 'job=\"vllm\"'}\n",
     ["arms[0].prometheus.url: required key is missing"]),
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in INVALID],
                         ids=[case for case, _, _ in INVALID])
def test_invalid_scenario_message(tmp_path: Path, text: str, expected: list[str]) -> None:
    with pytest.raises(UserError) as info:
        load_scenario(write(tmp_path, text))
    for part in expected:
        assert part in str(info.value)


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    text = textwrap.dedent("""\
        name: x
        ladder: [3, 1]
        colour: red
        arms:
          - name: a
            sim: {spec: sometimes}
          - name: a
            url: ftp://x
        """)
    with pytest.raises(UserError) as info:
        load_scenario(write(tmp_path, text))
    msg = str(info.value)
    assert "5 problem(s)" in msg
    for part in ("ladder: rung 1", "colour: unknown key", "arms[0].sim.spec: must be one of",
                 "arms[1].url: 'ftp://x' is not an http(s) URL", "arms[1].name: duplicate"):
        assert part in msg
    assert msg.count("\n") >= 4


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nladder: [1, 2\narms: []\n")
    with pytest.raises(UserError, match=r"scenario\.yaml:3:\d+: YAML syntax error"):
        load_scenario(path)


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"scenario file .* not found"):
        load_scenario(tmp_path / "nope.yaml")


def test_good_scenario_loads_with_yaml_on_off_as_words(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, GOOD))
    assert sc.ladder == [1, 2, 5]
    assert [a.sim.spec for a in sc.arms] == ["on", "off"]
    assert [a.arm_role for a in sc.arms] == ["spec_on", "spec_off"]
    assert sc.arms[0].draft_k == 3
    assert sc.request.ignore_eos is True


def test_relative_paths_resolve_against_the_scenario_folder(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"prompt": "hi"}\n')
    (tmp_path / "gpu.yaml").write_text("name: gpu\n")
    text = ("name: x\nrequest: {prompts: p.jsonl}\narms:\n  - name: a\n"
            "    sim: {profile: gpu.yaml, spec: schedule}\n")
    sc = load_scenario(write(tmp_path, text))
    assert sc.request.prompts == str(tmp_path / "p.jsonl")
    assert sc.arms[0].sim.profile == str(tmp_path / "gpu.yaml")
    assert sc.arms[0].arm_role == "other"


def test_external_arms_take_role_from_spec_and_strip_trailing_slash(tmp_path: Path) -> None:
    text = ("name: x\narms:\n  - name: a\n    url: http://10.0.0.5:8000/\n    spec: off\n"
            "  - name: b\n    command: {start: 'vllm serve m', base_url: 'http://127.0.0.1:9000'}\n"
            "    spec: on\n    k: 4\n")
    sc = load_scenario(write(tmp_path, text))
    assert sc.arms[0].url == "http://10.0.0.5:8000"
    assert [a.arm_role for a in sc.arms] == ["spec_off", "spec_on"]
    assert [a.kind for a in sc.arms] == ["url", "command"]
    assert sc.arms[1].draft_k == 4


def test_engine_and_slo_keys(tmp_path: Path) -> None:
    text = ("name: x\nslo: {tpot_p99_ms: 50}\narms:\n  - name: a\n    engine: llamacpp\n"
            "    url: http://h:1\n")
    sc = load_scenario(write(tmp_path, text))
    assert sc.arms[0].engine == "llamacpp"
    assert sc.slo is not None and (sc.slo.ttft_p99_ms, sc.slo.tpot_p99_ms) == (None, 50)
    assert sc.public_dict()["slo"] == {"ttft_p99_ms": None, "tpot_p99_ms": 50.0}


def test_ladder_may_be_a_comma_string(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, "name: x\nladder: '1, 4,9'\n" + ARMS_TAIL))
    assert sc.ladder == [1, 4, 9]


def test_an_arm_names_its_replicas_metrics_or_a_prometheus(tmp_path: Path) -> None:
    text = ("name: x\narms:\n  - name: a\n    url: http://h:1\n"
            "    metrics_url: [http://r0:8000/metrics/, http://r1:8000/metrics]\n"
            "  - name: b\n    url: http://h:1\n"
            "    prometheus: {url: 'http://p:9090/', selector: 'job=\"vllm\"'}\n"
            "  - name: c\n    url: http://h:1\n    metrics_url: http://h:1/m\n")
    a, b, c = load_scenario(write(tmp_path, text)).arms
    assert a.metrics_urls == ["http://r0:8000/metrics", "http://r1:8000/metrics"]
    assert b.prometheus is not None and b.prometheus.url == "http://p:9090"
    assert b.prometheus.selector == 'job="vllm"' and b.metrics_urls == []
    assert c.metrics_urls == ["http://h:1/m"]


def test_contexts_run_every_arm_once_per_prompt_length(tmp_path: Path) -> None:
    text = GOOD.replace("arms:", "contexts: [8192, 512, 'uniform:1000:3000']\narms:")
    sc = load_scenario(write(tmp_path, text))
    assert sc.contexts == ["512", "uniform:1000:3000", "8192"]  # by mean length
    assert [(a.name, a.context) for a in sc.arms][:3] == [
        ("spec-on-ctx512", "512"), ("spec-on-ctxuniform-1000-3000", "uniform:1000:3000"),
        ("spec-on-ctx8192", "8192")]
    assert len(sc.arms) == 6 and not sc.verify_default
    assert sc.request_for("spec-off-ctx8192").prompt_tokens == "8192"
    assert sc.request_for("nobody").prompt_tokens == ""
    again = type(sc).model_validate(sc.public_dict())  # the manifest's copy: no second pass
    assert [a.name for a in again.arms] == [a.name for a in sc.arms]
