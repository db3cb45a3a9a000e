"""Progress output: one updating line on a terminal, one line per run elsewhere."""

import io

from orchestrator.run.progress import Progress


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    p = Progress(2, stream=out, tty=False)
    p.advance("draft #1: ok, decode 500.0 tok/s, acceptance 47.0%")
    p.note("orch: arm x: skipped")
    p.advance("draft #2: ok")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[1/2] 0:00:00 elapsed, ETA ") and lines[0].endswith("acceptance 47.0%")
    assert lines[1] == "orch: arm x: skipped" and lines[2].startswith("[2/2]")
    assert "\r" not in out.getvalue()


def test_terminal_line_is_rewritten_in_place():
    out = io.StringIO()
    p = Progress(2, stream=out, tty=True)
    p.advance("a long description of the first run")
    p.advance("short")
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # a newline only after the last run
    last = text.split("\r")[-1]
    assert last.startswith("[2/2]") and "short" in last
    assert len(last.rstrip("\n")) >= len("[1/2] 0:00:00 elapsed | a long description of the first run")  # padded
