"""The report one can hand on, from a real DuckDB file: what ran (recipe, build, host and GPU settings, model files),
the arms' parameters, one table of figures with energy per token, one set of figures per sweep, every arm in every
figure (those without a figure marked with why), break-evens from the measured step cost, report.html."""

import base64
import json
import re
from datetime import datetime

import matplotlib.image
import pytest
from nvml_fake import no_nvml  # noqa: F401 (fixture)

from orchestrator import store
from orchestrator.analyze.costs import StepCost
from orchestrator.machine.telemetry import Sample
from orchestrator.report import acceptance_plot, html, results, sweeps
from orchestrator.report.acceptance_plot import Point
from orchestrator.report.sweeps import build_report

TARGET, DRAFT, GONE = "/models/qwen3-4b-q4_k_m.gguf", "/models/qwen3-0.6b-q4_k_m.gguf", "/models/gone-q8_0.gguf"
ENV = {
    "taken_at": "2026-11-23T10:00:00+00:00",
    "host": "bench",
    "os": "Debian GNU/Linux 12",
    "kernel": "6.1",
    "arch": "x86_64",
    "cpu_model": "AMD EPYC 7B13",
    "cpu_physical_cores": 8,
    "cpu_logical_cores": 16,
    "ram_bytes": 64 << 30,
    "gpu_driver": "550.54.15",
    "cuda_driver": "12.4",
    "cuda_toolkit": "12.4",
    "python": "3.11.7",
    "orch_version": "0.1.0",
    "orch_commit": "ab" * 20,
    "orch_dirty": False,
    "gpus": [
        {
            "index": 0,
            "name": "NVIDIA GeForce RTX 3090",
            "memory_total_bytes": 24 << 30,
            "compute_capability": "8.6",
            "power_limit_w": 280.0,
            "power_limit_enforced_w": 280.0,
            "power_limit_default_w": 350.0,
            "graphics_clock_mhz": 1695,
            "graphics_clock_max_mhz": 2100,
            "memory_clock_mhz": 9751,
            "memory_clock_max_mhz": 9751,
        }
    ],
    "build": {
        "name": "0c1e57098-cuda",
        "upstream_commit": "0c1e57098",
        "backend": "cuda",
        "cmake_options": {"GGML_CUDA": "ON"},
    },
}
# arm: (decode tok/s per repeat, acceptance, drafted, accepted, status, class, detail, params)
ARMS = {
    "baseline": ([100.0, 104.0, 98.0], None, None, None, "ok", None, None, {"spec": "none"}),
    "draft:draft_max=8": ([150.0, 160.0, 155.0], 0.7, 300, 210, "ok", None, None, {"spec": "draft", "draft_max": 8}),
    "draft:draft_max=16": ([151.0, 158.0, 152.0], 0.5, 400, 200, "ok", None, None, {"spec": "draft", "draft_max": 16}),
    "ngram": ([99.0, 101.0, 97.0], None, 0, 0, "ok", None, None, {"spec": "ngram-mod"}),
    "gone-draft": (
        [],
        None,
        None,
        None,
        "failed",
        "vocab_mismatch",
        "draft gone-q8_0.gguf cannot speculate for target qwen3-4b: vocab size 151936 vs 32000",
        {"spec": "draft", "draft": "gone-q8_0.gguf"},
    ),
    "ngram-cache": (
        [],
        None,
        None,
        None,
        "skipped",
        "unknown_flag",
        "flag --spec-type is not accepted",
        {"spec": "ngram-cache"},
    ),
}


def stored(tmp_path, *, sweeps=1) -> tuple:
    """A GPU sweep (or several, one per build) with every kind of arm, its models, samples and environment."""
    con = store.connect(tmp_path / "r.duckdb")
    store.record_model(
        con,
        {
            "sha256": "t" * 64,
            "path": TARGET,
            "size_bytes": 2_497_281_024,
            "architecture": "qwen3",
            "parameters": 4_022_468_096,
            "file_type": "Q4_K_M",
        },
    )
    store.record_model(
        con,
        {
            "sha256": "d" * 64,
            "path": DRAFT,
            "size_bytes": 484_220_000,
            "architecture": "qwen3",
            "parameters": 596_049_920,
            "file_type": "Q4_K_M",
        },
    )
    ids = []
    for b in range(sweeps):
        build = f"{'0c1e57098' if b == 0 else 'f49e91787'}-cuda"
        store.record_build(
            con,
            {
                "id": f"{build}@1",
                "name": build,
                "commit": ("0c1e57098" if b == 0 else "f49e91787") + "f" * 31,
                "upstream_commit": "0c1e57098" + "f" * 31,
                "backend": "cuda",
                "status": "ok",
                "dir": "d",
                "cuda_archs": ["86"],
            },
        )
        sweep = store.create_sweep(
            con,
            {
                "recipe_path": "recipes/spec_matrix.j2",
                "recipe_hash": "c" * 64,
                "recipe_text": "t",
                "mode": "cli",
                "repeat": 3,
                "build_id": f"{build}@1",
                "build_name": build,
                "status": "done",
                "run_order": "interleaved",
                "argv": ["/venv/bin/orch", "run", "recipes/spec_matrix.j2", "--repeat", "3"],
                "env": ENV,
                "variables": {},
                "started_at": datetime(2026, 11, 23, 10),
                "ended_at": datetime(2026, 11, 23, 10, 5),
            },
        )
        ids.append(sweep)
        for rep in range(3):
            for arm, (speeds, acc, drafted, accepted, status, klass, detail, params) in ARMS.items():
                argv = ["llama-speculative-simple", "-m", TARGET]
                if params.get("spec") == "draft":
                    argv += ["-md", GONE if arm == "gone-draft" else DRAFT]
                run = store.insert_run(
                    con,
                    {
                        "sweep_id": sweep,
                        "arm": arm,
                        "is_baseline": arm == "baseline",
                        "repeat_index": rep,
                        "mode": "cli",
                        "status": status,
                        "failure_class": klass,
                        "failure_detail": detail,
                        "params": {"ctx": 4096, "n_predict": 256, **params},
                        "rendered_argv": argv,
                        "executed_argv": argv if status != "skipped" else None,
                        "target_sha256": "t" * 64 if status == "ok" else None,
                        "draft_sha256": "d" * 64 if status == "ok" and "-md" in argv else None,
                        "reference_arm": None if arm == "baseline" else "baseline",
                        "wall_s": 12.0,
                    },
                )
                if status != "ok":
                    continue
                tps = speeds[rep] * (1 + 0.2 * b)
                extra = {"decode_tokens": 256} | (
                    {"draft_stats": [{"dur_ms": [0, 300.0, 0], "gen_tokens": drafted}]} if drafted else {}
                )
                con.execute(
                    "INSERT INTO metrics (run_id, decode_tps, n_predict, n_drafted, n_accepted, acceptance, "
                    "extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [run, tps, 256, drafted, accepted, acc, json.dumps(extra)],
                )
                store.insert_telemetry(
                    con,
                    run,
                    [
                        Sample(t=0.25 * i, gpu=0, util_pct=95.0, power_w=250.0 + rep, mem_used_bytes=8 << 30).to_dict()
                        for i in range(49)
                    ],
                )
    return con, ids


def report(tmp_path, **kw):
    con, ids = stored(tmp_path, **kw)
    path = build_report(con, ids, last=1, out=tmp_path / "out", run_id=None)
    return path, path.read_text()


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    """One sweep's report.md (made once: the plots take seconds)."""
    return report(tmp_path_factory.mktemp("one"))[1]


def check_png(path):
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300
    assert image[..., :3].std() > 0.05  # not a blank canvas


def test_the_report_names_what_ran(text):
    assert "- sweep 1 (spec_matrix.j2, 0c1e57098-cuda): " in text  # the verdict sentence
    assert "| recipe | `recipes/spec_matrix.j2` (sha256 cccccccccccc) |" in text
    assert f"| build | `0c1e57098-cuda`: llama.cpp `0c1e57098{'f' * 31}`, backend cuda, CUDA archs 86 |" in text
    assert "| host | `bench`: AMD EPYC 7B13, 16 cores, 64 GiB RAM, Debian GNU/Linux 12 |" in text
    assert (
        "| GPU 0 | NVIDIA GeForce RTX 3090 (24 GiB): 280 W limit (default 350 W); clocks now 1695 / 9751, "
        "max 2100 / 9751 MHz (graphics / memory) |"
    ) in text
    assert "| command | `orch run recipes/spec_matrix.j2 --repeat 3` |" in text
    # Model files: name, size, quantisation; the failed arm's draft was never hashed and is gone: said so.
    assert "| target | qwen3-4b-q4_k_m.gguf | 2.33 GiB | Q4_K_M | qwen3 | 4.02 B | 1, 2, 3, 4, 5, 6 |" in text
    assert "| draft | qwen3-0.6b-q4_k_m.gguf | 461.8 MiB | Q4_K_M | qwen3 | 596.0 M | 2, 3 |" in text
    assert "| draft | gone-q8_0.gguf | - | - | - | - | 5 | - | not recorded (file gone or not GGUF) |" in text


def test_the_summary_shows_energy_per_token_where_power_was_sampled(tmp_path):
    from orchestrator.analyze import summaries
    from orchestrator.analyze.summaries import draw

    con, ids = stored(tmp_path)
    rows = {r["arm"]: r for r in summaries.rows(con, ids)}
    # power / speed per run (250 W + repeat over the generation window), averaged over the runs
    expected = sum((250.0 + rep) / tps for rep, tps in enumerate(ARMS["baseline"][0])) / 3
    assert rows["baseline"]["joules_per_token"] == pytest.approx(expected, rel=0.02)
    assert rows["baseline"]["energy_runs"] == 3 and rows["gone-draft"]["joules_per_token"] is None
    assert "joules_per_token" in draw.table_text(list(rows.values())).splitlines()[0]
    con.execute("DELETE FROM telemetry")  # no power sampled (a CPU machine): no column, no figure
    rows = summaries.rows(con, ids)
    assert all(r["joules_per_token"] is None for r in rows)
    assert "joules_per_token" not in draw.table_text(rows).splitlines()[0]


def test_parameters_that_differ_are_a_table_and_the_common_ones_are_named_once(text):
    assert text.count("Every arm: `ctx=4096`, `n_predict=256`.") == 1
    assert "| # | arm | spec | draft_max | draft | speedup against |" in text
    assert "| 3 | draft:draft_max=16 | draft | 16 | - | #1 baseline |" in text


def test_one_results_table_with_energy_and_every_arm(text):
    header = next(line for line in text.splitlines() if line.startswith("| # | arm | ok | decode tok/s"))
    assert text.count(header) == 1 and text.count("| decode tok/s") == 1  # no second table of the same speeds
    assert "J/token" in header and "J/token 95%" in header and "GPU W" in header
    row = next(line for line in text.splitlines() if line.startswith("| 2 | draft:draft_max=8 | 3/3 |"))
    # 250-252 W over 256 tokens at ~155 tok/s: about 1.6 J per token.
    joules = float(row.split("|")[header.split("|").index(" J/token ")])
    assert joules == pytest.approx(251.0 * (256 / 155.0) / 256, rel=0.02)
    assert "J/token: GPU energy per generated token" in text


def test_failed_skipped_and_idle_arms_are_listed_with_why(text):
    section = text.split("### Failed, skipped and idle arms")[1]
    assert "| 4 | ngram | drafted nothing | 3 of 3 |" in section
    assert (
        "| 5 | gone-draft | failed | 3 of 3 | vocab_mismatch | draft gone-q8_0.gguf cannot speculate for target "
        "qwen3-4b: vocab size 151936 vs 32000 |"
    ) in section
    assert "| 6 | ngram-cache | skipped | 3 of 3 | unknown_flag | flag --spec-type is not accepted |" in section


def test_figures_are_per_sweep_and_the_html_is_self_contained(tmp_path):
    path, text = report(tmp_path, sweeps=2)
    out = path.parent
    for name in (
        "decode-sweep1.png",
        "decode-sweep2.png",
        "acceptance-sweep1.png",
        "acceptance-sweep2.png",
        "builds-0c1e57098-cuda-vs-f49e91787-cuda.png",
        "telemetry.png",
    ):
        check_png(out / name)
        assert f"]({name})" in text
    assert not (out / "decode_tps.png").exists()  # never one figure pooling the sweeps
    page_html = (out / "report.html").read_text()
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)"', page_html)
    assert len(images) == 6 and all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert 'src="http' not in page_html and '.png"' not in page_html  # nothing outside the file
    assert "<td>vocab_mismatch</td>" in page_html and "<h2>Verdict</h2>" in page_html


def test_the_break_even_comes_from_the_measured_step_cost(text):
    # draft_max=8: 256 tokens, 210 accepted -> 46 passes; 300 drafted / 3 runs... per run 300 drafted, g = 300/46.
    row = next(line for line in text.splitlines() if line.startswith("| 2 | draft:draft_max=8 | 70.0% |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    g, k = float(cells[3]), float(cells[4])
    assert g == pytest.approx(300 / 46, rel=1e-3)
    reference_ms = 1000 / (sum(ARMS["baseline"][0]) / 3)
    speeds = ARMS["draft:draft_max=8"][0]
    k_expected = sum(1000 * 256 / s for s in speeds) / (3 * 46) / reference_ms
    assert k == pytest.approx(k_expected, rel=1e-3)
    assert cells[7] == f"{100 * (k_expected - 1) / g:.1f}%"


def test_every_arm_is_in_the_plots_data_and_those_without_a_figure_say_why(tmp_path, monkeypatch):
    con, ids = stored(tmp_path)
    data = []
    monkeypatch.setattr(sweeps, "write_report", lambda out_dir, report_data: data.append(report_data) or out_dir)
    build_report(con, ids, last=1, out=tmp_path / "out", run_id=None)
    sd = data[0].sweeps[0]
    bars = {b.arm: b for b in results.decode_bars(sd)}
    assert list(bars) == list(ARMS)
    assert bars["gone-draft"].mean is None and bars["gone-draft"].note == "3 failed of 3 (vocab_mismatch)"
    assert bars["ngram-cache"].note == "3 skipped of 3 (unknown_flag)"
    assert bars["ngram"].note == "drafted nothing in 3 of 3 ok runs"
    points = {p.arm: p for p in results.acceptance_points(sd)}
    assert list(points) == list(ARMS)
    assert [a for a, p in points.items() if p.plotted] == ["draft:draft_max=8", "draft:draft_max=16"]
    assert points["baseline"].note == "the baseline: speedup 1 by definition"
    assert points["ngram"].note == "drafted nothing: no acceptance, no speedup"
    assert points["gone-draft"].note == "3 failed of 3 (vocab_mismatch)"
    key = "\n".join(line for _, line in acceptance_plot._key(list(points.values())))  # noqa: SLF001
    assert all(arm in key for arm in ARMS)


def overlapping(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def test_numbers_of_points_that_coincide_do_not_overlap():
    cost = StepCost(1, "a", "base", draft_length=4.0, pass_cost=2.2, draft_cost=0.2, break_even=0.3)
    points = [Point(n, f"arm-{n}", 0.445, 0.40 + 0.004 * n, 0.3, 0.6, cost) for n in range(1, 7)]
    fig = acceptance_plot.draw(points, "six arms at one acceptance")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(labels) == 12  # each point's number, and each break-even marker's
    assert overlapping(labels) == []


def test_no_acceptance_figure_without_a_speculative_point(tmp_path):
    points = [Point(1, "baseline", None, 1.0, note="the baseline"), Point(2, "x", None, None, note="failed")]
    assert acceptance_plot.acceptance_speedup(points, tmp_path / "a.png", "t") is None
    assert not (tmp_path / "a.png").exists()


def test_the_html_page_renders_the_markdown_orch_writes(tmp_path):
    md = (
        "# Title\n\nA `code` and **bold** <b> line\ncontinued.\n\n- one\n- two\n\n| a | b |\n|---|---:|\n"
        "| x\\|y | 1.5 |\n\n![alt](missing.png)\n"
    )
    out = html.render(md, tmp_path, "T")
    assert "<h1>Title</h1>" in out and "<code>code</code>" in out and "<strong>bold</strong>" in out
    assert "&lt;b&gt; line continued.</p>" in out and "<ul><li>one</li><li>two</li></ul>" in out
    assert '<tr><th>a</th><th>b</th></tr><tr><td>x|y</td><td class="num">1.5</td></tr>' in out
    assert "[missing image missing.png]" in out


def test_a_report_without_gpu_says_there_is_no_energy(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "r.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": "cli",
            "repeat": 1,
            "build_name": "b",
            "status": "done",
            "env": {**ENV, "gpus": []},
        },
    )
    run = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": "baseline",
            "is_baseline": True,
            "repeat_index": 0,
            "mode": "cli",
            "status": "ok",
            "params": {},
        },
    )
    con.execute("INSERT INTO metrics (run_id, decode_tps) VALUES (?, 50.0)", [run])
    text = build_report(con, [sweep], last=1, out=tmp_path / "o", run_id=None).read_text()
    assert "No energy per token: orch reads power from NVIDIA GPUs (NVML), and this host had none in use" in text
    assert "No arm has both an acceptance and a speedup" in text


def test_a_build_whose_sweep_has_no_ended_run_yet_is_no_pair(tmp_path, monkeypatch):
    """`orch report` beside a sweep that just started on another build: its runs are all running, so there is
    nothing to compare yet; the report is written without that pair instead of failing."""
    con, ids = stored(tmp_path, sweeps=2)
    con.execute("UPDATE runs SET status = 'running' WHERE sweep_id = ?", [ids[1]])
    data = []
    monkeypatch.setattr(sweeps, "write_report", lambda out_dir, report_data: data.append(report_data) or out_dir)
    build_report(con, ids, last=1, out=tmp_path / "out", run_id=None)
    assert data[0].pairs == [] and [s.id for s in data[0].sweeps] == ids


def test_the_key_shows_the_modelled_speedup_beside_the_measured_one():
    """g = 4, c = 0.2, acceptance 0.5: E = 3 tokens a pass, so Leviathan's model predicts 3 / 1.8 = 1.67x, while
    the measured pass cost k = 2.2 puts the dotted line at 3 / 2.2 = 1.36x there."""
    cost = StepCost(1, "a", "base", draft_length=4.0, pass_cost=2.2, draft_cost=0.2, break_even=0.3, acceptance=0.5)
    lines = [line for _, line in acceptance_plot._key([Point(1, "a", 0.5, 1.36, cost=cost)])]  # noqa: SLF001
    assert "modelled" in lines[0] and "1.67x" in lines[2] and cost.speedup_at(0.5) == pytest.approx(3 / 2.2)
    no_time = StepCost(1, "a", "base", draft_length=4.0, pass_cost=2.2, draft_cost=None, break_even=0.3, acceptance=0.5)
    # server mode: no draft time, no prediction
    assert acceptance_plot.predicted_text(Point(1, "a", 0.5, 1.36, cost=no_time)) == "-"
    assert acceptance_plot.PREDICTED_MEANS in " ".join(lines)  # wrapped under the table


def test_a_prediction_the_measurement_does_not_bear_out_is_not_shown():
    """Gemma 3 270M on 2 CPU cores: 100% acceptance of 8-token drafts predicts 9x at one target step a pass; the
    runs measured 1.65x [1.48, 1.84]. Within 25% or inside the interval it is shown, else withheld."""
    cost = StepCost(1, "a", "ctrl", draft_length=8.0, pass_cost=5.45, draft_cost=0.0, break_even=0.56, acceptance=1.0)
    assert cost.modelled_speedup == pytest.approx(9.0)
    assert cost.checked_model(1.65, 1.48, 1.84) is None
    assert acceptance_plot.predicted_text(Point(1, "a", 1.0, 1.65, low=1.48, high=1.84, cost=cost)) == "-"
    assert cost.checked_model(7.5) == pytest.approx(9.0)  # 20% off: shown
    assert cost.checked_model(5.0, 4.0, 9.5) == pytest.approx(9.0)  # inside the interval: shown
    assert cost.checked_model(None) is None  # nothing measured to check it by


def test_the_report_reads_at_1000_px_tables_scroll_and_the_acceptance_key_is_legible(tmp_path):
    """The HTML page at a 1,000 px window: a wide table scrolls inside its box (the page does not), and the acceptance
    figure, shown at most 968 px wide there, keeps its key's text at 10 px or more."""
    from PIL import Image

    from orchestrator.report.plots import DPI

    page = html.render("| a | b |\n|---|---|\n| 1 | 2 |\n", tmp_path, "t")
    assert '<div class="wide"><table>' in page and ".wide { overflow-x: auto" in page
    cost = StepCost(
        1, "control:llama-speculative-simple", "base", draft_length=4.0, pass_cost=2.2, draft_cost=0.2, break_even=0.3
    )
    points = [Point(n, f"draft-{n}-with-a-long-name", 0.5 + 0.05 * n, 0.6, 0.5, 0.7, cost) for n in range(1, 8)]
    path = acceptance_plot.acceptance_speedup(points, tmp_path / "a.png", "a title\nits second line")
    shown = min(1.0, 968 / Image.open(path).size[0])
    assert acceptance_plot.KEY_PT * DPI / 72 * shown >= 10
