"""Progress output: one updating line on a terminal (cut to its width), one line per run elsewhere (wrapped to 80
columns off a terminal, notes too)."""

import io
import re
from types import SimpleNamespace

from orchestrator.machine import roofline
from orchestrator.run import measuring
from orchestrator.run.progress import Progress


def test_plain_lines_when_not_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    out = io.StringIO()
    p = Progress(2, stream=out, tty=False)
    p.advance("draft #1: ok, decode 500.0 tok/s, acceptance 47.0%")
    p.note("orch: arm x: skipped")
    p.advance("draft #2: ok")
    lines = out.getvalue().splitlines()
    assert re.match(r"\[1/2\] 0:00:\d\d elapsed, ETA ", lines[0]) and lines[0].endswith("acceptance 47.0%")
    assert lines[1] == "orch: arm x: skipped" and lines[2].startswith("[2/2]")
    assert "\r" not in out.getvalue()


def test_plain_lines_wrap_to_80_columns_off_a_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    p = Progress(1, stream=out, tty=False)
    what = "ngram-mod:ngram_n=8,draft_max=16 #1: ok, decode 76.8 tok/s, acceptance 100.0%, " * 3
    p.note("orch: " + what)
    p.advance(what)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines) and len(lines) > 4
    assert lines[0].startswith("orch: ") and sum(line.startswith("[1/1]") for line in lines) == 1
    assert all(line.startswith("  ") for line in lines if not line.startswith(("orch: ", "[1/1]")))


def test_terminal_line_is_rewritten_in_place(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    out = io.StringIO()
    p = Progress(2, stream=out, tty=True)
    p.advance("a long description of the first run")
    p.advance("short")
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # a newline only after the last run
    last = text.split("\r")[-1]
    assert last.startswith("[2/2]") and "short" in last
    assert len(last.rstrip("\n")) >= len("[1/2] 0:00:00 elapsed | a long description of the first run")  # padded


def test_a_terminal_line_longer_than_the_terminal_is_cut_so_it_can_be_rewritten(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    p = Progress(2, stream=out, tty=True)
    p.advance("x" * 200)
    first = out.getvalue().split("\r")[-1]
    assert len(first) == 59 and first.endswith("...")


def test_a_wrapped_line_never_ends_with_a_word_alone(monkeypatch):
    """Off a terminal a long run line wraps at 80 columns; its last two words stay together ("run 54", where a plain
    wrap left "54" alone on a line)."""
    from orchestrator.tables import fill

    monkeypatch.delenv("COLUMNS", raising=False)
    pad = next(n for n in range(80) if fill("x" * n + " decode 29.9 tok/s, the bound (3.7s) run 54").endswith("\n  54"))
    out = io.StringIO()
    Progress(10, stream=out, tty=False).note("")  # the stream's first line, as a sweep's note is
    p = Progress(10, stream=out, tty=False)
    p.line = lambda what: what  # this line's text exactly, without its clock
    p.advance("x" * pad + " decode 29.9 tok/s, the bound (3.7s) run 54")
    lines = out.getvalue().splitlines()
    assert lines[-1] == "  run 54" and all(len(line) <= 80 for line in lines)


def test_a_speculating_runs_progress_line_leaves_the_bound_share_to_plain_runs():
    """A drafting run's passes include the draft's time: "target passes at 16% of the bound" would read as a slow
    target. Plain runs keep the share; a run that speculated (or tried to, drafting nothing) shows none."""
    arm = SimpleNamespace(models=SimpleNamespace(target=SimpleNamespace(decode_bytes=5_000_000_000)))
    settings = measuring.MeasurementSettings(0, roofline.Bandwidth(1e12, "measured", "CPU x", ""))
    assert (
        measuring.speed_text({"decode_tps": 50.0}, arm, settings)
        == "decode 50.0 tok/s, target passes at 25% of the 200/s measured bound"
    )
    drafting = {"decode_tps": 300.0, "acceptance": 0.8, "n_drafted": 250, "n_generated": 300, "n_accepted": 200}
    assert measuring.speed_text(drafting, arm, settings) == "decode 300.0 tok/s, acceptance 80.0%"
    assert measuring.speed_text({"decode_tps": 45.0, "n_drafted": 0}, arm, settings) == "decode 45.0 tok/s"
