"""The loop measure (parse/repetition.py) on real generated texts (tests/fixtures/real_outputs) and made-up ones."""

import json
from pathlib import Path

import pytest

from orchestrator.parse import output
from orchestrator.parse.repetition import LOOP_SHARE, repetition

REAL = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[1] / "fixtures" / "real_outputs" / "gemma-3-270m.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize("record", REAL, ids=[r["id"] for r in REAL])
def test_real_texts_are_flagged_as_a_person_reads_them(record):
    text = output.generated_text(record["stdout"], record["argv"])
    measured = repetition(text, output.prompt_of(record["argv"]))
    assert measured.degenerate_loop == (record["read_as"] == "loops")
    assert measured.literal == (record["read_as"] == "literal")


def test_the_readings_cover_each_case():
    assert {r["read_as"] for r in REAL} == {"loops", "goes on", "literal"}


def test_a_phrase_said_twice_is_no_loop_but_a_sentence_to_the_end_is():
    prose = (
        "The committee met on Tuesday to discuss the budget. After a long debate about the new library, the "
        "members agreed to postpone the vote until spring, when the figures from the city would be known."
    )
    assert not repetition(prose).degenerate_loop
    looped = prose + " The ship was late." * 12
    measured = repetition(looped)
    assert measured.degenerate_loop and measured.loop_share >= LOOP_SHARE


def test_a_text_too_short_to_tell_is_not_flagged():
    assert repetition("Paris. Paris. Paris.").loop_share is None
    assert not repetition("").degenerate_loop


def test_repetition_the_prompt_set_up_is_literal_only_when_it_repeats_the_prompt():
    prompt = "red, green, blue, " * 4
    assert repetition("red, green, blue, " * 10, prompt).literal
    # the prompt repeats, but the loop is another text: a loop
    other = repetition("the cat sat on the mat. " * 10, prompt)
    assert other.degenerate_loop and not other.literal
    # the same text without that prompt: a loop
    assert repetition("red, green, blue, " * 10).degenerate_loop
