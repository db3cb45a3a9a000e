"""Logs of the real Gemma 3 270M (tests/fixtures/logs/README.md, `gemma-*`): counts of generated tokens per tool,
an arm that decoded past -n and its control run again at that count, their texts equal and literal, not a loop."""

from pathlib import Path

import pytest

from orchestrator.parse import output, parse_run
from orchestrator.parse.repetition import repetition

LOGS = Path(__file__).parent.parent / "fixtures" / "logs" / "0c1e57098"
PROMPT = (
    "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday, Monday, Tuesday, Wednesday, Thursday, "
    "Friday, Saturday, Sunday, Monday, Tuesday,"
)


def read(name: str):
    stdout, stderr = ((LOGS / f"{name}.{s}").read_text(errors="replace") for s in ("stdout", "stderr"))
    return stdout, parse_run(stdout, stderr)


@pytest.mark.parametrize(
    "name, generated", [("gemma-completion", 64), ("gemma-spec-ngram-map-k", 72), ("gemma-control-matched", 72)]
)
def test_every_tool_counts_its_generated_tokens(name, generated):
    _, parsed = read(name)
    assert parsed.metrics["n_generated"] == generated and parsed.metrics["decode_tps"] > 0


def test_the_arm_and_its_control_at_its_count_decode_the_same_text_which_repeats_the_prompt():
    arm_out, arm = read("gemma-spec-ngram-map-k")
    control_out, control = read("gemma-control-matched")
    assert arm.metrics["n_drafted"] > 0 and arm.metrics["acceptance"] == 1.0
    assert control.metrics["n_drafted"] == 0
    argv = ["llama-speculative-simple", "--temp", "0", "-p", PROMPT]
    texts = [output.generated_text(out, argv) for out in (arm_out, control_out)]
    assert texts[0] and texts[0] == texts[1]
    measured = repetition(texts[0], PROMPT)
    assert measured.literal and not measured.degenerate_loop
