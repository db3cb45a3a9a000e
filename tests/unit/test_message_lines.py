"""message_lines.first_line and last_line: the one line of an exception or a program's stderr that orch's messages
quote, as each caller needs it (git's error after its hints, a DuckDB line cut short, a remote traceback's cause)."""

import pytest

from orchestrator.message_lines import first_line, last_line

GIT_STDERR = (
    "hint: Using 'master' as the name for the initial branch.\n"
    "hint: rename it with git branch -m\n"
    "fatal: couldn't find remote ref nosuch\n"
    "error: later words\n"
)


def test_the_first_non_blank_line_stripped():
    assert first_line(ValueError("\n\n  bad magic  \nat offset 0\n")) == "bad magic"
    assert first_line("  usage: x\n") == "usage: x"


def test_a_preferred_start_wins_over_earlier_lines():
    assert first_line(GIT_STDERR, prefer=("fatal:", "error:")) == "fatal: couldn't find remote ref nosuch"
    assert first_line(GIT_STDERR) == "hint: Using 'master' as the name for the initial branch."
    assert first_line("hint: only hints\n", prefer=("fatal:",)) == "hint: only hints"  # none preferred: the first


@pytest.mark.parametrize("said", [ValueError(), OSError(""), RuntimeError(" \n \n")])
def test_an_exception_without_words_is_named_by_its_type(said):
    assert first_line(said) == type(said).__name__
    assert last_line(said) == type(said).__name__


def test_a_text_without_words_is_empty_for_the_callers_own_fallback():
    assert first_line("") == first_line(" \n\n") == last_line("") == ""


def test_limit_cuts_the_line_not_the_message():
    exc = RuntimeError("x" * 500 + "\nsecond")
    assert first_line(exc, limit=300) == "x" * 300
    assert first_line(exc) == "x" * 500


def test_last_line_is_a_tracebacks_cause():
    exc = RuntimeError(
        "ray.exceptions.RayTaskError: task failed\nTraceback (most recent call last):\n"
        '  File "w.py", line 3\n    ValueError: the real cause\n\n'
    )
    assert last_line(exc) == "ValueError: the real cause"
    assert last_line(exc, limit=10) == "ValueError"
