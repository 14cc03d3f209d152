"""The locust command line built for an arm."""

from __future__ import annotations

from pathlib import Path

from specload.config.scenario import parse_scenario
from specload.runner.locust_proc import (
    LOCUSTFILE,
    LoadMode,
    locust_command,
    request_args,
    worker_command,
)

RAW = {
    "name": "t",
    "ladder": [1, 2, 5],
    "warmup_s": 2,
    "measure_s": 4,
    "repeats": 2,
    "request": {"model": "m", "max_tokens": 64, "ignore_eos": True, "min_tokens": 64,
                "api_key_env": "MY_KEY"},
    "arms": [{"name": "on", "sim": {"spec": "on", "k": 3}},
             {"name": "off", "sim": {"spec": "off"}}],
}


def scenario(**changes):
    return parse_scenario({**RAW, **changes}, Path("."))


def test_locustfile_is_shipped_inside_the_package() -> None:
    assert LOCUSTFILE.is_file()
    assert LOCUSTFILE.parent.name == "loadgen"


def test_single_process_command() -> None:
    cmd = locust_command(scenario(), "http://h:1", Path("/r/on/locust"), [2, 5], LoadMode())
    joined = " ".join(cmd)
    assert cmd[1:3] == ["-m", "locust"]
    for part in ("--headless", "--csv /r/on/locust", "--csv-full-history", "--host http://h:1",
                 "--ladder 2,5", "--warmup 2.0", "--measure 4.0", "--exit-code-on-error 0"):
        assert part in joined
    assert "--processes" not in cmd and "--master" not in cmd


def test_a_run_from_a_later_rung_sends_that_rungs_own_prompts() -> None:
    """Interleaved arms and resumed rungs start a Locust run at a later rung: its seed is
    that rung's, the same for every arm, and not the first rung's (whose prompts the
    server's prefix cache would hold)."""
    def seed(levels: list[float], **changes) -> str:
        cmd = locust_command(scenario(**changes), "http://h:1", Path("p"), levels,
                             LoadMode())
        return cmd[cmd.index("--seed") + 1] if "--seed" in cmd else "0"

    assert seed([1, 2, 5]) == "0"
    later = {seed([2]), seed([5]), seed([2, 5])}
    assert len(later) == 2 and "0" not in later and seed([2]) == seed([2, 5])
    assert seed([2]) == seed([2])
    assert seed([2], request={**RAW["request"], "seed": 7}) not in later


def test_request_args_map_onto_user_options_without_secrets() -> None:
    args = request_args(scenario().request)
    assert args[args.index("--model") + 1] == "m"
    assert args[args.index("--min-tokens") + 1] == "64"
    assert args[args.index("--api-key-env") + 1] == "MY_KEY"
    assert "--ignore-eos" in args
    assert "--prompts" not in args


def test_processes_and_master_modes() -> None:
    sc = scenario(processes=4)
    assert LoadMode.from_scenario(sc).processes == 4
    assert LoadMode.from_scenario(sc, processes=2).processes == 2
    cmd = locust_command(sc, "http://h:1", Path("p"), [1], LoadMode.from_scenario(sc))
    assert cmd[cmd.index("--processes") + 1] == "4"
    assert cmd[cmd.index("--master-bind-host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--master-bind-port") + 1] == cmd[cmd.index("--master-port") + 1]
    assert "--enable-rebalancing" in cmd  # a lost worker's users restart on the others
    dist = scenario(distributed={"workers": 3, "master_bind_host": "0.0.0.0",
                                 "master_bind_port": 6000})
    mode = LoadMode.from_scenario(dist)
    cmd = locust_command(dist, "http://h:1", Path("p"), [1], mode)
    joined = " ".join(cmd)
    assert "--master --expect-workers 3 --master-bind-host 0.0.0.0 --master-bind-port 6000" \
        in joined
    assert "--expect-workers-max-wait 300" in joined
    assert "--enable-rebalancing" in cmd
    assert worker_command(mode).startswith("specload worker ")
    assert worker_command(mode).endswith(" --port 6000 --processes N")
    assert "0.0.0.0" not in worker_command(mode)
    local = LoadMode(workers=2, master_bind_host="10.0.0.7", master_bind_port=5557)
    assert worker_command(local) == "specload worker 10.0.0.7 --port 5557 --processes N"


def test_each_arm_at_a_context_sends_its_own_prompt_length() -> None:
    sc = scenario(contexts=[512, "uniform:4000:5000"])
    for arm, length in (("on-ctx512", "512"), ("off-ctxuniform-4000-5000", "uniform:4000:5000")):
        cmd = locust_command(sc, "http://h:1", Path("/r/locust"), [1], LoadMode(), arm=arm)
        assert cmd[cmd.index("--prompt-tokens") + 1] == length
    plain = locust_command(scenario(), "http://h:1", Path("/r/locust"), [1], LoadMode(), arm="on")
    assert "--prompt-tokens" not in plain
