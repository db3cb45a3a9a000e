"""Speed against quality with real binaries and the tiny quality model: quantization read back from the files,
perplexity and KL divergence against the f16 base (the base against itself: KLD 0, same top p 100%), the
quant_matrix recipe end to end with its report, llama-bench at two depths on two commits, and the pre-flight
refusals (a depth that does not fit: 37; a text too short for the context: 36)."""

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from integration.conftest import COMMIT, OLD_COMMIT, assert_reparse_changes_nothing, db_rows, orch_run, run_orch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def qenv(env, tmp_path):
    return {**env, "ORCH_CACHE": str(tmp_path / "cache")}


def test_quantize_gives_real_k_quants_and_names_silent_replacements(orch_exe, qenv, tiny_dir, tmp_path):
    res = run_orch(
        orch_exe,
        "models",
        "quantize",
        str(tiny_dir / "tiny-quality.gguf"),
        "--types",
        "q2_k,q4_k_m,q6_k,q8_0",
        "--build",
        COMMIT,
        "--out",
        str(tmp_path / "q"),
        "--json",
        env=qenv,
    )
    assert res.returncode == 0, res.stderr
    quants = {q["requested"]: q for q in json.loads(res.stdout)}
    for requested, tensor_type in {"q2_k": "Q2_K", "q4_k_m": "Q4_K", "q6_k": "Q6_K", "q8_0": "Q8_0"}.items():
        q = quants[requested]
        assert q["label"] == requested and not q["replaced"] and not q["fallbacks"]
        assert tensor_type in q["tensor_types"], q["tensor_types"]
    sizes = [quants[t]["size_bytes"] for t in ("q2_k", "q4_k_m", "q6_k", "q8_0")]
    assert sizes == sorted(sizes)
    stored = db_rows(qenv, "SELECT requested, label, replaced FROM quants ORDER BY requested")
    assert [r["requested"] for r in stored] == ["q2_k", "q4_k_m", "q6_k", "q8_0"]
    again = run_orch(
        orch_exe,
        "models",
        "quantize",
        str(tiny_dir / "tiny-quality.gguf"),
        "--types",
        "q8_0",
        "--build",
        COMMIT,
        "--out",
        str(tmp_path / "q"),
        "--json",
        env=qenv,
    )
    assert json.loads(again.stdout)[0]["cached"] is True
    # The 128-wide tiny target: llama-quantize replaces every K-quant, and orch says so.
    res = run_orch(
        orch_exe,
        "models",
        "quantize",
        str(tiny_dir / "tiny-target.gguf"),
        "--types",
        "q2_k",
        "--build",
        COMMIT,
        "--out",
        str(tmp_path / "q"),
        "--json",
        env=qenv,
    )
    (q,) = json.loads(res.stdout)
    assert q["replaced"] and q["label"] == "Q4_0 (asked q2_k)" and "Q2_K" not in q["tensor_types"]


def test_quant_matrix_end_to_end_with_quality_and_report(orch_exe, qenv, tmp_path):
    res = orch_run(
        orch_exe,
        ROOT / "recipes" / "quant_matrix.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny_quality.toml"),
        "--repeat",
        "1",
        "--no-summary",
        env=qenv,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    rows = db_rows(
        qenv,
        "SELECT arm, quant, kld_mean, same_top_p, ppl, dppl_pct, decode_tps FROM run_quality "
        "JOIN (SELECT id, json_extract_string(params, '$.quant') AS quant FROM runs) p "
        "ON p.id = run_quality.run_id",
    )
    by_quant = {}
    for r in rows:
        by_quant.setdefault(r["quant"], r)
    assert set(by_quant) == {"f16", "q8_0", "q6_k", "q5_k_s", "q4_k_m", "q3_k_s", "q2_k"}
    assert len(rows) == 28 and all(r["decode_tps"] for r in rows)
    base = by_quant["f16"]
    assert abs(base["kld_mean"]) < 1e-4 and base["same_top_p"] >= 99.9 and abs(base["dppl_pct"]) < 0.01
    assert by_quant["q8_0"]["kld_mean"] < by_quant["q4_k_m"]["kld_mean"] < by_quant["q2_k"]["kld_mean"]
    assert by_quant["q2_k"]["same_top_p"] < by_quant["q8_0"]["same_top_p"]
    # One measurement per model file: 28 runs, 7 quality rows (the base's own logits row aside).
    assert db_rows(qenv, "SELECT count(DISTINCT quality_id) AS n FROM runs")[0]["n"] == 7
    summary = run_orch(orch_exe, "summary", env=qenv)
    assert "kld" in summary.stdout and "same_top_p" in summary.stdout
    report = run_orch(orch_exe, "report", "--out", str(tmp_path / "rep"), env=qenv)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "### Speed against quality" in text and (tmp_path / "rep" / "quality-sweep1.png").exists()
    assert_reparse_changes_nothing(orch_exe, qenv)


PERPLEXITY_LOSES_ITS_TAIL = textwrap.dedent("""\
    #!{python}
    # llama-perplexity whose calls numbered in {losses} (1 is the base logits) exit 0 having lost the lines that
    # hold their results, as llama.cpp's logger can at exit on a busy machine (ggml-org/llama.cpp#22142)
    import os, subprocess, sys
    count = {count!r}
    n = int(open(count).read()) + 1 if os.path.exists(count) else 1
    open(count, "w").write(str(n))
    res = subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True)
    out, err = res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")
    if n in {losses}:
        err = err[:err.find("[1]")] if "[1]" in err else ""  # cut before the first chunk's figure
        out = ""
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.exit(res.returncode)
""")


@pytest.mark.parametrize("losses", [(2,), (2, 3, 4)], ids=["one lost, measured again", "every attempt lost"])
def test_every_run_keeps_its_quality_when_a_measurement_lost_its_output(orch_exe, qenv, real_build, tmp_path, losses):
    """A CI run on a cold machine stored a quant matrix's first run without its quality link (issue 48): its
    measurement's output lost its statistics and the next run of the same model measured it. A lost measurement is
    run again (three attempts, as a CLI run's), and a run whose attempts were all lost is linked once the next run
    of its model measures it: every ok run ends with its model's quality row."""
    root = tmp_path / "builds"
    bdir = root / real_build.name
    shutil.copytree(real_build.dir, bdir, symlinks=True)
    exe = bdir / "bin" / "llama-perplexity"
    exe.rename(exe.with_name("llama-perplexity.real"))
    exe.write_text(
        PERPLEXITY_LOSES_ITS_TAIL.format(
            python=sys.executable,
            real=str(exe.with_name("llama-perplexity.real")),
            count=str(tmp_path / "count"),
            losses=set(losses),
        )
    )
    exe.chmod(0o755)
    env = {**qenv, "ORCH_BUILDS_DIR": str(root)}
    res = orch_run(
        orch_exe,
        ROOT / "recipes" / "quant_matrix.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny_quality.toml"),
        "--arms",
        "plain:quant=f16*",
        "--repeat",
        "1",
        "--no-summary",
        env=env,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    runs = db_rows(env, "SELECT id, status, quality_id FROM measured_runs ORDER BY id")
    assert [r["status"] for r in runs] == ["ok", "ok"]
    assert all(r["quality_id"] is not None for r in runs), runs
    assert len({r["quality_id"] for r in runs}) == 1  # one model, one measurement
    assert len(db_rows(env, "SELECT run_id FROM run_quality")) == 2
    # the base logits, then run 1's attempts (again while lost, three at most), then run 2's where run 1 kept none
    calls = 1 + (2 if len(losses) == 1 else 3 + 1)
    assert int((tmp_path / "count").read_text()) == calls


def test_bench_mode_two_depths_on_two_commits_compares(orch_exe, qenv, old_build):
    for commit in (OLD_COMMIT, COMMIT):
        res = run_orch(
            orch_exe,
            "run",
            str(ROOT / "recipes" / "bench.j2"),
            "--vars",
            str(ROOT / "recipes" / "tiny_bench.toml"),
            "--build",
            commit,
            "--repeat",
            "2",
            env=qenv,
            timeout=600,
        )
        assert res.returncode == 0, res.stderr[-2000:]
    rows = db_rows(
        qenv,
        "SELECT r.arm, m.decode_tps, m.encode_tps, m.extra FROM runs r JOIN metrics m "
        "ON m.run_id = r.id WHERE r.status = 'ok'",
    )
    assert len(rows) == 16
    depths = {json.loads(r["extra"])["bench_n_depth"] for r in rows}
    assert depths == {0, 512}
    assert all((r["decode_tps"] is None) == r["arm"].startswith("test=pp") for r in rows)
    compared = run_orch(orch_exe, "compare", "--base", OLD_COMMIT, "--head", COMMIT, "--format", "json", env=qenv)
    assert compared.returncode == 0, compared.stderr
    tests = [t for t in json.loads(compared.stdout)["rows"] if t["arm"].startswith("test=")]
    assert len(tests) == 4 and all(t["base_n"] == 2 and t["head_n"] == 2 and t["ratio"] for t in tests)
    assert_reparse_changes_nothing(orch_exe, qenv)


def test_a_depth_that_does_not_fit_is_refused_before_launch(orch_exe, qenv):
    res = orch_run(
        orch_exe,
        ROOT / "recipes" / "bench.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny_bench.toml"),
        "--set",
        "depth_long=100000000",
        env=qenv,
    )
    assert res.returncode == 37, res.stderr
    assert "test=tg,at=deep needs" in res.stderr and "test=tg,at=start" not in res.stderr
    assert not Path(qenv["ORCH_DB"]).exists()  # nothing written at all


def test_a_text_too_short_for_the_context_stops_before_the_sweep(orch_exe, qenv):
    res = orch_run(
        orch_exe,
        ROOT / "recipes" / "kv_cache.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny_kv_cache.toml"),
        "--set",
        "quality_ctx=2048",
        env=qenv,
    )
    assert res.returncode == 36, res.stderr
    assert "llama-perplexity needs at least 4096" in res.stderr
    assert db_rows(qenv, "SELECT count(*) AS n FROM sweeps")[0]["n"] == 0


@pytest.mark.parametrize(
    "recipe, vars_file, setting, code, says",
    [
        ("bench.j2", "tiny_bench.toml", "depth_long=100000000", 37, "test=tg,at=deep needs"),
        ("kv_cache.j2", "tiny_kv_cache.toml", "quality_ctx=2048", 36, "llama-perplexity needs at least 4096"),
    ],
    ids=["bench depth fit", "quality text length"],
)
def test_bisect_runs_bench_and_quality_recipes_with_the_pre_steps_of_orch_run(
    orch_exe, qenv, old_build, recipe, vars_file, setting, code, says
):
    """One way to run a recipe (run/recipe_run.py): bisect's probe stops where `orch run` stops, for the same
    reason, before any run (bisect once skipped the bench depth fit and quality's pre-steps)."""
    paths = [str(ROOT / "recipes" / recipe), "--vars", str(ROOT / "recipes" / vars_file), "--set", setting]
    ran = run_orch(orch_exe, "run", *paths, env=qenv)
    bisected = run_orch(
        orch_exe,
        "bisect",
        *paths,
        "--commits",
        f"{OLD_COMMIT},{COMMIT}",
        "--metric",
        "decode_tps",
        "--arm",
        "test=tg,at=start" if recipe == "bench.j2" else "cache_type=q8_0",
        "--backend",
        "cpu",
        env=qenv,
    )
    assert ran.returncode == bisected.returncode == code, (ran.stderr[-1500:], bisected.stderr[-1500:])
    assert says in ran.stderr and says in bisected.stderr
    assert db_rows(qenv, "SELECT count(*) AS n FROM runs")[0]["n"] == 0  # neither started a run


def test_a_replaced_quant_is_named_by_what_its_file_holds_in_every_table(orch_exe, qenv, tmp_path):
    """The 128-wide tiny target: llama-quantize puts Q4_0 where q2_k was asked. The arm carries the type its file
    got beside the one asked, in the stored runs, the summary, the verdict and the report's model table."""
    res = orch_run(
        orch_exe,
        ROOT / "recipes" / "quant_matrix.j2",
        "--vars",
        str(ROOT / "recipes" / "tiny_quality.toml"),
        "--set",
        "target=tiny-target.gguf",
        "--set",
        "quality_base=tiny-target.gguf",
        "--set",
        "short_depth=64",
        "--arms",
        "plain:quant=q2_k*short",
        "--repeat",
        "1",
        env=qenv,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    arm = "plain:quant=q4_0-asked-q2_k,context=short"
    stored = db_rows(qenv, "SELECT arm, params->>'quant' AS quant, params->>'quant_asked' AS asked FROM runs")
    assert {(r["arm"], r["quant"], r["asked"]) for r in stored} == {(arm, "q4_0-asked-q2_k", "q2_k")}
    assert arm in res.stdout and "quant=q2_k," not in res.stdout  # the summary and its verdict
    report = run_orch(orch_exe, "report", "--out", str(tmp_path / "rep"), env=qenv)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "Q4_0 (asked q2_k)" in text and "| Q2_K |" not in text
