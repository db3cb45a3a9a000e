"""`orch report`'s acceptance-by-position figure: one per sweep, every arm in its key (those without a line with
why), a run's rates past its last accepted position counted as 0."""

import json

import pytest
from nvml_fake import no_nvml  # noqa: F401 (fixture)
from test_report import ARMS, check_png, stored

from orchestrator.report import position_plot, results, sweeps
from orchestrator.report.sweeps import build_report

# Per repeat: the CLI statistics line stops at the last position a run accepted; the server's series runs on.
RATES = {"draft:draft_max=8": [[0.9, 0.7, 0.5], [0.8, 0.6], [0.85, 0.65, 0.45, 0.2]]}


def with_rates(tmp_path):
    con, ids = stored(tmp_path)
    runs = con.execute(
        "SELECT id, arm, repeat_index FROM runs WHERE arm IN (SELECT unnest(?::VARCHAR[])) ORDER BY id", [list(RATES)]
    ).fetchall()
    for run, arm, rep in runs:
        con.execute(
            "UPDATE metrics SET accept_rate_per_pos = ?, mean_accept_len = ?, seq_acceptance = ? WHERE run_id = ?",
            [json.dumps(RATES[arm][rep]), 1 + sum(RATES[arm][rep]), 0.2, run],
        )
    return con, ids


def test_every_arm_is_in_the_position_figure_and_those_without_a_line_say_why(tmp_path, monkeypatch):
    con, ids = with_rates(tmp_path)
    data = []
    monkeypatch.setattr(sweeps, "write_report", lambda out_dir, report_data: data.append(report_data) or out_dir)
    build_report(con, ids, last=1, out=tmp_path / "out", run_id=None)
    arms = {a.arm: a for a in results.position_rates(data[0].sweeps[0])}
    assert list(arms) == list(ARMS)
    eight = arms["draft:draft_max=8"]
    assert eight.mean == pytest.approx([0.85, 0.65, (0.5 + 0 + 0.45) / 3, 0.2 / 3])  # past a run's list: 0
    assert eight.seq_acceptance == pytest.approx(0.2) and len(eight.runs) == 3
    assert arms["baseline"].note == "drafts nothing: no positions"
    assert arms["draft:draft_max=16"].note.startswith("no per-position rates in its logs")
    assert arms["ngram"].note == "drafted nothing"
    assert arms["gone-draft"].note == "3 failed of 3 (vocab_mismatch)"
    key = "\n".join(line for _, line in position_plot._key(list(arms.values())))  # noqa: SLF001
    assert all(arm in key for arm in ARMS)


def test_the_report_shows_acceptance_by_position_per_sweep(tmp_path):
    con, ids = with_rates(tmp_path)
    path = build_report(con, ids, last=1, out=tmp_path / "out", run_id=None)
    text = path.read_text()
    check_png(path.parent / "positions-sweep1.png")
    assert "### Acceptance by draft position" in text and "](positions-sweep1.png)" in text


def test_no_position_figure_where_no_arm_printed_rates(tmp_path):
    arms = [position_plot.ArmRates(1, "baseline", note="drafts nothing"), position_plot.ArmRates(2, "d")]
    assert position_plot.acceptance_by_position(arms, tmp_path / "p.png", "t") is None
    assert not (tmp_path / "p.png").exists()


def test_a_bounded_sequence_acceptance_shows_its_bounds():
    arm = position_plot.ArmRates(1, "mtp", runs=[[0.5, 0.3, 0.1]], mean_accept_len=1.9, seq_low=0.121, seq_high=0.152)
    (_, _, (_, line)) = position_plot._key([arm])  # noqa: SLF001
    assert "[12, 15]%" in line and "1.90" in line


def test_arm_numbers_at_close_first_points_do_not_overlap():
    arms = [position_plot.ArmRates(n, f"a{n}", runs=[[0.65 + 0.001 * n, 0.3]]) for n in range(1, 6)]
    heights = position_plot._spread([100 * a.mean[0] for a in arms], 4.0, 0, 105)  # noqa: SLF001
    assert all(abs(x - y) >= 4.0 - 1e-9 for i, x in enumerate(heights) for y in heights[i + 1 :])
    assert sorted(heights) == heights  # the order of the points is kept
