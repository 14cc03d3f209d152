"""`specload sim-curve` arguments: workload lengths are checked and change the prediction."""

import pytest

from specload.cli import main
from specload.sim import SimConfigError
from specload.sim.curve import check_lengths, predict
from specload.sim.profile import load_profile


def test_prompt_tokens_shift_the_curve() -> None:
    profile = load_profile("seed-glm")
    short = predict(profile, "off", None, [30], prompt_tokens=150, output_tokens=256)[0]
    long = predict(profile, "off", None, [30], prompt_tokens=4096, output_tokens=256)[0]
    # longer prompts cost prefill and KV: less output per second at the same concurrency
    assert long.output_tok_s < 0.9 * short.output_tok_s


@pytest.mark.parametrize(
    ("prompt", "output", "message"),
    [(0, None, "--prompt-tokens must be 1.."), (16384, None, "--prompt-tokens must be 1.."),
     (16000, 1000, "--max-tokens must be 1..384")],
)
def test_lengths_must_fit_the_model(prompt: int, output: int | None, message: str) -> None:
    with pytest.raises(SimConfigError, match=message.replace(".", r"\.")):
        check_lengths(load_profile("seed-glm"), prompt, output)


def test_cli_prints_the_workload(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim-curve", "--profile", "seed-glm", "--spec", "off", "--ladder", "1",
                 "--prompt-tokens", "200", "--max-tokens", "64"])
    assert code == 0
    out = capsys.readouterr().out
    assert "prompt 200 tok, output 64 tok" in out
