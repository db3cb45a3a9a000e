"""Telemetry, environment, model insight, roofline and reports on a real sweep of the tiny models."""

import json
import math
import re
from pathlib import Path

import pytest

from integration.conftest import PLANNED, db_rows, orch_run, run_orch

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


@pytest.fixture(scope="module")
def sweep_env(orch_exe, cache_env, tiny_dir, tmp_path_factory):
    env = {
        **cache_env,
        "ORCH_MODELS": str(tiny_dir),
        "ORCH_DB": str(tmp_path_factory.mktemp("insight") / "r.duckdb"),
        "ORCH_CACHE": str(tmp_path_factory.mktemp("cache")),
    }
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "2", "--telemetry-interval", "0.05", env=env)
    assert res.returncode == 0, res.stderr
    return env


def test_runs_store_telemetry_environment_roofline_and_memory_estimate(sweep_env):
    runs = db_rows(
        sweep_env,
        "SELECT id, telemetry, memfit, decode_bytes, bandwidth_bytes_per_s, bandwidth_label "
        f"FROM measured_runs WHERE {PLANNED} ORDER BY id",
    )
    assert len(runs) == 6  # baseline, draft and the draft's control, two repeats
    for run in runs:
        samples = db_rows(
            sweep_env,
            "SELECT count(*) AS n, max(rss_bytes) AS rss FROM telemetry WHERE run_id = ? AND gpu IS NULL",
            [run["id"]],
        )[0]
        assert samples["n"] >= 1 and samples["rss"] > 0
        summary = json.loads(run["telemetry"])
        assert summary["gpu"] == "no GPU" and summary["rss_peak_bytes"] > 0
        assert run["decode_bytes"] > 0 and run["bandwidth_bytes_per_s"] > 1e9 and run["bandwidth_label"] == "measured"
        memfit = json.loads(run["memfit"])
        assert memfit["models"][0]["role"] == "target" and memfit["models"][0]["weight_bytes"] > 0
        assert memfit["models"][0]["kv_bytes"] > 0 and memfit["fits"] is None  # no GPU: nothing to fit against
    env = json.loads(db_rows(sweep_env, "SELECT env FROM sweeps")[0]["env"])
    assert env["cpu_logical_cores"] >= 1 and env["python"] and env["build"]["upstream_commit"].startswith("0c1e57098")
    roof = db_rows(
        sweep_env,
        f"SELECT roofline_pct, bound_tps FROM run_roofline v JOIN runs r ON r.id = v.run_id WHERE r.{PLANNED}",
    )
    assert len(roof) == 6 and all(r["roofline_pct"] > 0 and r["bound_tps"] > 0 for r in roof)


def test_summary_and_views_agree_on_real_runs(orch_exe, sweep_env):
    rows = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=sweep_env).stdout)}
    views = {
        r["arm"]: r
        for r in db_rows(
            sweep_env,
            "SELECT a.arm, a.acceptance, r.speedup_paired, b.speedup_paired "
            "AS vs_baseline FROM arm_summary a LEFT JOIN speedup_vs_reference"
            " r USING (sweep_id, arm) LEFT JOIN speedup_vs_baseline b "
            "USING (sweep_id, arm)",
        )
    }
    assert set(rows) == set(views) == {"baseline", "draft", "control:llama-speculative-simple"}
    for arm, row in rows.items():
        if not row["is_baseline"]:
            assert row["speedup"] == pytest.approx(views[arm]["speedup_paired"], rel=1e-9), arm
        if row["acceptance"] is not None:
            assert row["acceptance"] == pytest.approx(views[arm]["acceptance"], rel=1e-9)
    assert rows["draft"]["vs"] == "control:llama-speculative-simple"
    assert rows["draft"]["speedup_vs_baseline"] == pytest.approx(views["draft"]["vs_baseline"], rel=1e-9)


def test_each_figure_has_one_definition_on_real_runs(orch_exe, sweep_env):
    """The roofline share and the speedup interval as the views and the summary give them agree on real runs, and
    so does the share orch run's progress line computes for a run not yet stored (all from store/figures)."""
    from orchestrator.analyze import stats
    from orchestrator.store import figures

    rows = {
        r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "1", "--format", "json", env=sweep_env).stdout)
    }
    runs = db_rows(
        sweep_env,
        "SELECT v.*, r.status, m.n_generated, m.n_accepted, r.params->>'length_of' AS length_of "
        "FROM run_roofline v JOIN runs r ON r.id = v.run_id JOIN metrics m ON m.run_id = v.run_id "
        "WHERE v.sweep_id = 1",
    )
    assert len([r for r in runs if r["length_of"] is None]) == 6  # and the draft's matched control runs, if any
    for run in runs:
        live = figures.run_roofline(
            run["decode_tps"], run["bandwidth_bytes_per_s"], run["decode_bytes"], run["n_generated"], run["n_accepted"]
        )
        assert live == pytest.approx((run["bound_tps"], run["roofline_pct"]), rel=1e-12)
        # per target pass: a pass yields its accepted drafts and one token of its own
        passes = run["n_generated"] - (run["n_accepted"] or 0)
        assert run["tokens_per_step"] == pytest.approx(run["n_generated"] / passes if run["n_accepted"] else 1)
    assert any(r["tokens_per_step"] > 1 for r in runs if r["arm"] == "draft")  # the tiny draft is accepted
    for arm, row in rows.items():
        ok = [r for r in runs if r["arm"] == arm and r["status"] == "ok"]

        def mean(key, ok=ok):
            return sum(r[key] for r in ok) / len(ok)

        generated, accepted = sum(r["n_generated"] for r in ok), sum(r["n_accepted"] or 0 for r in ok)
        per_step = generated / (generated - accepted) if accepted else 1
        assert row["roofline_pct"] == pytest.approx(
            100 * mean("decode_tps") / per_step / mean("bound_tps"), rel=1e-9
        ), arm
        # the speedup and its interval: the view's paired samples, put through the t-interval on logs here
        samples = (
            db_rows(
                sweep_env,
                "SELECT a.tps / b.tps AS ratio FROM decode_samples a JOIN decode_samples b "
                "ON b.sweep_id = a.sweep_id AND b.repeat_index = a.repeat_index "
                "AND b.prompt_id = a.prompt_id AND b.arm = ? WHERE a.sweep_id = 1 AND a.arm = ?",
                [row["vs"], arm],
            )
            if row["vs"]
            else []
        )
        if row["is_baseline"] or not samples:
            continue
        logs = stats.describe([math.log(s["ratio"]) for s in samples])
        assert len(samples) == 2 and row["speedup"] == pytest.approx(math.exp(logs.mean), rel=1e-9), arm
        assert (row["speedup_low"], row["speedup_high"]) == pytest.approx(
            (math.exp(logs.ci_low), math.exp(logs.ci_high)), rel=1e-9
        ), arm


def test_report_and_summary_show_the_same_digits(orch_exe, sweep_env, tmp_path):
    """The report's arm table and the summary's table print the same cells for every arm."""
    shared = {
        "ok": "ok",
        "decode tok/s": "decode_tps",
        "95% interval": "ci95",
        "cv": "cv",
        "acceptance": "acceptance",
        "speedup": "speedup",
        "speedup 95%": "speedup_ci95",
        "roofline": "roofline_pct",
    }
    res = run_orch(orch_exe, "report", "1", "--out", str(tmp_path / "report"), env=sweep_env)
    assert res.returncode == 0, res.stderr
    report = _md_table((tmp_path / "report" / "report.md").read_text(), "| # | arm | ok | decode tok/s")
    res = run_orch(
        orch_exe, "summary", "1", "--format", "md", "--columns", ",".join(["arm", *shared.values()]), env=sweep_env
    )
    assert res.returncode == 0, res.stderr
    summary = _md_table(res.stdout, "| arm |")
    assert (
        {r["arm"] for r in report}
        == {r["arm"] for r in summary}
        == {"baseline", "draft", "control:llama-speculative-simple"}
    )
    by_arm = {r["arm"]: r for r in summary}
    compared = 0
    for row in report:
        for title, column in shared.items():
            if title in row:
                assert row[title] == by_arm[row["arm"]][column], (row["arm"], column)
                compared += row[title] != "-"
    assert compared >= 15  # speeds, intervals, speedups and roofline shares, not only blanks
    assert "speedup 95%" in report[0] and "roofline" in report[0]


def _md_table(text: str, header_start: str) -> list[dict]:
    """The rows of the first Markdown table whose header line starts so, by column title."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    titles = [c.strip() for c in lines[start].strip("|").split(" | ")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(titles, (c.strip() for c in line.strip().strip("|").split(" | ")))))
    return rows


def test_summary_shows_the_roofline(orch_exe, sweep_env):
    rows = json.loads(run_orch(orch_exe, "summary", "--format", "json", env=sweep_env).stdout)
    assert all(r["bound_tps"] > 0 and r["roofline_pct"] > 0 for r in rows)
    assert "roofline_pct" in run_orch(orch_exe, "summary", "--wide", env=sweep_env).stdout.splitlines()[0]


def test_telemetry_can_be_turned_off(orch_exe, sweep_env):
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", "--telemetry-interval", "0", env=sweep_env)
    assert res.returncode == 0, res.stderr
    rows = db_rows(
        sweep_env,
        "SELECT r.telemetry, (SELECT count(*) FROM telemetry t WHERE t.run_id = r.id) AS n "
        "FROM runs r WHERE r.sweep_id = 2",
    )
    assert rows and all(r["telemetry"] is None and r["n"] == 0 for r in rows)


def test_env_and_models_inspect_pages(orch_exe, sweep_env, tiny_dir):
    md = run_orch(orch_exe, "env", "--build", "0c1e570", env=sweep_env).stdout
    assert "CPU" in md and "Python" in md and "0c1e57098" in md
    snap = json.loads(run_orch(orch_exe, "env", "--format", "json", env=sweep_env).stdout)
    assert snap["gpus"] == [] and snap["ram_bytes"] > 0
    info = json.loads(
        run_orch(orch_exe, "models", "inspect", str(tiny_dir / "tiny-target.gguf"), "--json", env=sweep_env).stdout
    )
    assert sum(info["quant_mix"].values()) == info["weight_bytes"] and 0 < info["decode_bytes"] <= info["weight_bytes"]
    stored = db_rows(sweep_env, "SELECT decode_bytes, weight_bytes FROM models WHERE sha256 = ?", [info["sha256"]])
    assert stored == [{"decode_bytes": info["decode_bytes"], "weight_bytes": info["weight_bytes"]}]


def test_report_from_a_real_sweep(orch_exe, sweep_env, tmp_path):
    from matplotlib import image

    res = run_orch(orch_exe, "report", "1", "--out", str(tmp_path / "report"), env=sweep_env)  # the sampled sweep
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "report" / "report.md").read_text()
    pngs = sorted((tmp_path / "report").glob("*.png"))
    assert {p.name for p in pngs} == {
        "decode-sweep1.png",
        "acceptance-sweep1.png",
        "positions-sweep1.png",
        "telemetry.png",
    }
    for png in pngs:
        assert f"]({png.name})" in page
        pixels = image.imread(png)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 200 and pixels.std() > 0.05  # decodes, not blank
    assert "## Environment" in page and "| roofline |" in page
    assert "## Verdict" in page and "- sweep 1 (recipe_a.j2, 0c1e57098-cpu): " in page
    # What ran, from the store: build commit and backend, the model files with size and quantisation.
    assert "| build | `0c1e57098-cpu`: llama.cpp `0c1e57098" in page and "backend cpu" in page
    assert "| target | tiny-target.gguf | 18.2 MiB | F16 | llama |" in page
    assert "| draft | tiny-draft.gguf | 16.9 MiB | F16 | llama |" in page
    # The draft arm's break-even, from its measured step cost: on a CPU a pass costs many target steps.
    # (The arms are numbered in the order their measured runs began: an attempt retried under load can move one.)
    costs = page.split("| # | arm | acceptance | drafted per pass g |")[1].splitlines()
    assert any(re.match(r"\| \d+ \| draft \|", line) for line in costs), costs
    assert "No energy per token: orch reads power from NVIDIA GPUs (NVML)" in page
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(pngs) and "<h2>Verdict</h2>" in html


def test_a_report_to_share_names_no_folder_or_host_of_this_machine(orch_exe, sweep_env, tmp_path):
    """--anonymize: this machine's folders (models, the checkout the recipe was run from) and its host name are
    placeholders in both pages, the pictures still decode; without it the page names them."""
    import base64
    import re
    import socket

    from orchestrator.report.anonymize import EMBEDDED

    plain = run_orch(orch_exe, "report", "1", "--out", str(tmp_path / "plain"), env=sweep_env)
    shared = run_orch(orch_exe, "report", "1", "--out", str(tmp_path / "shared"), "--anonymize", env=sweep_env)
    assert plain.returncode == shared.returncode == 0, shared.stderr
    assert shared.stdout.split() == [str(tmp_path / "shared" / "report.md"), str(tmp_path / "shared" / "report.html")]
    host = re.compile(rf"\b{re.escape(socket.gethostname())}\b")
    local = [sweep_env["ORCH_MODELS"], str(ROOT)]
    before = (tmp_path / "plain" / "report.md").read_text()
    assert all(folder in before for folder in local) and host.search(before)
    for name in ("report.md", "report.html"):
        # The pictures are kept byte for byte: their base64 can spell a short host name ("vm") by chance.
        page = EMBEDDED.sub("", (tmp_path / "shared" / name).read_text())
        assert not [folder for folder in local if folder in page] and not host.search(page), name
    page = (tmp_path / "shared" / "report.md").read_text()
    assert "<models>" in page and "<host>" in page
    html = (tmp_path / "shared" / "report.html").read_text()
    for encoded in html.split("data:image/png;base64,")[1:]:
        assert base64.b64decode(encoded.split('"', 1)[0])[:8] == b"\x89PNG\r\n\x1a\n"  # pictures left whole
