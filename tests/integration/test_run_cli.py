"""orch run end to end: real binaries, tiny models, a real DuckDB file; failures stored and classified."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from integration.conftest import COMMIT, SLOT_ORDER, assert_reparse_changes_nothing, db_rows, orch_run, run_orch
from orchestrator.errors import MissingModels, NoSuchRun, RecipeError, RunsFailed

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = str(ROOT / "recipes" / "recipe_a.j2")
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


def test_recipe_a_runs_and_stores_metrics_matching_the_log(orch_exe, env):
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "2", env=env)
    assert res.returncode == 0, res.stderr
    # Each slot's measurement, in the order the slots ran (a slot run again after its log lost its tail has a later
    # id, but starts right after its lost attempt).
    every = db_rows(env, "SELECT r.*, m.* FROM measured_runs r JOIN metrics m ON m.run_id = r.id ORDER BY r.started_at")
    # Where the draft decoded past -n, its control ran again at its count right after it (run/length_match.py), as
    # its reference for that repeat: the same number of tokens on both sides of each pair.
    by_slot = {(r["arm"], r["repeat_index"]): r for r in every}
    for r in every:
        if r["arm"] == "draft":
            assert r["reference_arm"] in ("control:llama-speculative-simple", "control~draft")
            assert by_slot[(r["reference_arm"], r["repeat_index"])]["n_generated"] == r["n_generated"]
    runs = [r for r in every if "length_of" not in json.loads(r["params"])]
    assert [(r["arm"], r["repeat_index"], r["status"]) for r in runs] == [
        ("baseline", 0, "ok"),
        ("draft", 0, "ok"),
        ("control:llama-speculative-simple", 0, "ok"),
        ("baseline", 1, "ok"),
        ("draft", 1, "ok"),
        ("control:llama-speculative-simple", 1, "ok"),
    ]
    control = [r for r in runs if r["arm"].startswith("control:")]
    assert all(r["n_drafted"] == 0 and r["reference_arm"] == "baseline" and r["is_control"] for r in control)
    runs = [r for r in runs if not r["arm"].startswith("control:")]
    for run in runs:
        stderr = db_rows(env, "SELECT gz FROM run_logs WHERE run_id = ? AND stream = 'stderr'", [run["run_id"]])
        import gzip

        log = gzip.decompress(stderr[0]["gz"]).decode()
        assert run["decode_tps"] > 0 and run["peak_rss_bytes"] > 0 and run["wall_s"] > 0
        if run["arm"] == "draft":
            executed = json.loads(run["executed_argv"])
            assert {"--spec-draft-n-max", "--spec-type", "-lv"} <= set(executed)
            assert any("--draft-max -> --spec-draft-n-max" in t for t in json.loads(run["translations"]))
            drafted = int(re.search(r"n_drafted = (\d+)", log).group(1))
            accepted = int(re.search(r"n_accept  = (\d+)", log).group(1))
            speed = float(re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", log).group(1))
            assert (run["n_drafted"], run["n_accepted"]) == (drafted, accepted)
            assert run["acceptance"] == pytest.approx(accepted / drafted)
            assert run["decode_tps"] == pytest.approx(speed, rel=1e-3)
            assert 0.3 <= run["acceptance"] <= 0.9 and run["n_draft_max"] == 16
        else:
            eval_line = re.search(r"eval time =\s+([\d.]+) ms /\s+(\d+) runs .*?([\d.]+) tokens per second", log)
            assert run["eval_ms"] == pytest.approx(float(eval_line.group(1)))
            assert run["acceptance"] is None and run["n_drafted"] is None
    assert "speedup" in res.stdout and "draft" in res.stdout  # the per-arm table read back from DuckDB
    assert res.stdout.rsplit("\nverdict: ", 1)[-1].startswith("sweep 1 (recipe_a.j2, 0c1e57098-cpu): ")
    # The sweep's end kept its summary, current: `orch summary` reads it and prints what the run printed last
    assert db_rows(env, "SELECT sweep_id, arms FROM sweep_summaries") == [{"sweep_id": 1, "arms": 3}]
    assert _current(env) == {1}
    assert res.stdout.endswith(run_orch(orch_exe, "summary", env=env).stdout)

    listed = json.loads(run_orch(orch_exe, "runs", "--json", env=env).stdout)
    measured = {r["id"] for r in db_rows(env, "SELECT id FROM measured_runs")}  # a lost log tail is run again
    assert all(r["status"] == "ok" or r["failure_class"] == "truncated_log" for r in listed)
    draft = [r for r in listed if r["arm"] == "draft" and r["run_id"] in measured]
    assert len(draft) == 2 and all(0 < r["acceptance"] < 1 and r["decode_tps"] > 0 for r in draft)
    for key in (
        "run_id",
        "sweep_id",
        "arm",
        "status",
        "failure_class",
        "n_draft_max",
        "n_predict",
        "n_drafted",
        "n_accepted",
        "acceptance",
        "encode_tps",
        "decode_tps",
        "prompt_eval_ms",
        "prompt_eval_tokens",
        "eval_ms",
        "eval_runs",
        "load_ms",
        "total_ms",
        "mean_accept_len",
        "accept_rate_per_pos",
    ):
        assert key in draft[0]

    query = run_orch(
        orch_exe,
        "query",
        "SELECT arm, count(*) AS n FROM run_summary GROUP BY arm ORDER BY arm",
        "--format",
        "csv",
        env=env,
    )
    assert query.stdout.strip().splitlines() == ["arm,n", "baseline,2", "control:llama-speculative-simple,2", "draft,2"]

    assert_reparse_changes_nothing(orch_exe, env)
    assert _current(env) == {1}


def _current(env) -> set[int]:
    """The sweeps whose kept summary is current, by each sweep's rows; the file's stamp (made at the sweep's end,
    then by reparse) says the same."""
    from orchestrator import store
    from orchestrator.analyze.summaries import kept
    from orchestrator.store import sweep_summaries

    with store.opened(Path(env["ORCH_DB"]), read_only=True) as con:
        code = kept.code_key()
        by_rows = {h["sweep_id"] for h in sweep_summaries.current_by_rows(con, [1, 2, 3], code)}
        assert set(sweep_summaries.stamped_current(con, code) or []) == by_rows
        return by_rows


def test_dry_run_prints_rendered_and_executed_argv(orch_exe, env):
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--dry-run", env=env)
    assert res.returncode == 0, res.stderr
    assert (
        "arm draft (against control:llama-speculative-simple):" in res.stdout
        and '"--draft-max"' in res.stdout
        and '"--spec-draft-n-max"' in res.stdout
    )
    assert not Path(env["ORCH_DB"]).exists()  # nothing ran, nothing stored


def test_a_comma_list_in_set_runs_one_sweep_per_value_each_with_its_own_baseline(orch_exe, env):
    """--set draft_max=2,4 (llama-bench's -p 512,1024): one sweep per value, both checked before either runs;
    the dry run shows each, and a bad value in any combination stops the command before a run."""
    shown = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--set", "draft_max=2,4", "--dry-run", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    plans = json.loads(shown.stdout)
    assert [p["set"] for p in plans] == [["draft_max=2"], ["draft_max=4"]]
    drafts = [next(a["rendered"] for a in p["arms"] if a["arm"] == "draft") for p in plans]
    assert [argv[argv.index("--draft-max") + 1] for argv in drafts] == ["2", "4"]
    res = orch_run(
        orch_exe,
        RECIPE_A,
        "--vars",
        TINY_VARS,
        "--set",
        "draft_max=2,4",
        "--set",
        "n_predict=8",
        "--repeat",
        "1",
        env=env,
    )
    assert res.returncode in (0, RunsFailed.exit_code), res.stderr
    sweeps = db_rows(env, "SELECT id, variables->>'draft_max' AS draft_max FROM sweeps ORDER BY id")
    assert [s["draft_max"] for s in sweeps] == ["2", "4"]
    baselines = db_rows(env, "SELECT sweep_id, count(*) AS n FROM runs WHERE is_baseline GROUP BY 1 ORDER BY 1")
    assert [b["n"] for b in baselines] == [1, 1]
    bad = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--set", "draft_max=2,x", "--set", "n_predict=8", env=env)
    assert bad.returncode == RecipeError.exit_code and "draft_max" in bad.stderr
    assert len(db_rows(env, "SELECT id FROM sweeps")) == 2  # nothing more ran


def test_a_drafts_cost_is_said_before_launch_and_one_that_cannot_pay_is_warned(orch_exe, env, tiny_dir):
    """The tiny draft is the target's first 2 of 6 layers, but their shared vocabulary's embedding and output rows
    are most of both files: it reads most of the target's bytes per token. A draft that is the target itself
    (100%) can never pay."""
    from orchestrator.models import gguf_info

    target, draft = (gguf_info.inspect(tiny_dir / f) for f in ("tiny-target.gguf", "tiny-draft.gguf"))
    share = draft.decode_bytes / target.decode_bytes
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--dry-run", env=env)
    assert res.returncode == 0, res.stderr
    assert f"draft reads {share:.0%} of the target's bytes per token" in res.stdout
    assert f"breaks even only above {share:.0%} acceptance" in res.stdout and "warning:" not in res.stdout
    same = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--dry-run", "--set", "draft=tiny-target.gguf", env=env)
    assert same.returncode == 0, same.stderr
    assert "warning: draft reads 100% of the target's bytes per token, so no acceptance can pay" in same.stdout


def test_vocab_mismatch_is_caught_before_launch_and_stored(orch_exe, env):
    res = orch_run(
        orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", "--set", "draft=tiny-draft-gpt2.gguf", env=env
    )
    assert res.returncode == 15
    assert "tiny-draft-gpt2.gguf" in res.stderr and "tiny-target.gguf" in res.stderr and "vocab" in res.stderr
    rows = db_rows(env, f"SELECT arm, status, failure_class, executed_argv FROM measured_runs r ORDER BY {SLOT_ORDER}")
    assert [(r["arm"], r["status"], r["failure_class"]) for r in rows] == [
        ("baseline", "ok", None),
        ("draft", "failed", "vocab_mismatch"),
        ("control:llama-speculative-simple", "ok", None),
    ]  # the control loads no draft
    assert all(
        r["failure_class"] == "truncated_log"
        for r in db_rows(  # a run that lost its log's tail, run again
            env, "SELECT failure_class FROM runs WHERE id NOT IN (SELECT id FROM measured_runs)"
        )
    )
    assert db_rows(env, "SELECT count(*) AS n FROM run_logs WHERE run_id = 2") == [{"n": 0}]  # never launched


def test_missing_models_stop_the_run_once_before_anything_is_stored(orch_exe, env, tiny_dir):
    first = orch_run(
        orch_exe,
        ROOT / "recipes" / "recipe_b.j2",
        "--vars",
        ROOT / "recipes" / "tiny_single.toml",
        "--repeat",
        "1",
        env=env,
    )
    assert first.returncode == 0, first.stderr
    count = (
        "SELECT (SELECT count(*) FROM sweeps) AS sweeps, (SELECT count(*) FROM runs) AS runs, "
        "(SELECT count(*) FROM builds) AS builds, (SELECT count(*) FROM models) AS models"
    )
    before = db_rows(env, count)
    for extra in ((), ("--dry-run",)):
        res = orch_run(
            orch_exe,
            RECIPE_A,
            "--vars",
            TINY_VARS,
            "--set",
            "target=nope.gguf",
            "--set",
            "draft=/nowhere/draft.gguf",
            *extra,
            env=env,
        )
        assert res.returncode == MissingModels.exit_code, res.stderr
        assert res.stderr.startswith(
            f"orch: error: 2 model files are missing, so nothing was run or stored: "
            f"{tiny_dir}/nope.gguf (target), /nowhere/draft.gguf (draft). "
        )
        assert res.stderr.count("\n") == 1 and "--models DIR" in res.stderr and "hf:OWNER/REPO" in res.stderr
        assert res.stdout == ""
    assert db_rows(env, count) == before  # no sweep, no runs, nothing half-made


def test_a_recipe_run_without_vars_names_its_default_files_and_creates_no_database(orch_exe, env, tmp_path):
    env = {**env, "ORCH_MODELS": str(tmp_path / "models")}
    res = orch_run(orch_exe, RECIPE_A, env=env)
    assert res.returncode == MissingModels.exit_code
    assert (
        f"{tmp_path}/models/qwen3.5-4b-q4_k_m.gguf (target), {tmp_path}/models/qwen3-0.6b-q4_k_m.gguf (draft)"
        in res.stderr
        and f"now {tmp_path}/models, which does not exist" in res.stderr
    )
    assert not Path(env["ORCH_DB"]).exists()


def test_flag_the_build_lacks_is_skipped_with_the_closest_flags(orch_exe, env, tmp_path):
    recipe = tmp_path / "typo.j2"
    recipe.write_text(
        '{% set meta = {"arms": {"typo": {}}} %}\n'
        "{{ bin }}/llama-completion -m {{ models }}/tiny-target.gguf --tempp 0 -n 8\n"
    )
    res = orch_run(orch_exe, recipe, env=env)
    assert res.returncode == 0  # skipped is not failed: the sweep did what the build allows
    assert "flag --tempp is not accepted by llama-completion of build 0c1e57098-cpu" in res.stderr
    assert "--temp" in res.stderr
    rows = db_rows(env, "SELECT status, failure_class, failure_detail FROM runs")
    assert rows[0]["status"] == "skipped" and rows[0]["failure_class"] == "unknown_flag"


# Spawns a grandchild that would outlive a careless kill, appends its pid to the file named by $1, then hangs. A
# shell, not Python: it starts in milliseconds, so even a busy machine writes the pid well before a 2 s timeout.
HANGER = '#!/bin/sh\nsleep 300 &\necho $! >> "$1"\nexec sleep 300\n'


def hang_recipe(tmp_path):
    script = tmp_path / "hang.sh"
    script.write_text(HANGER)
    script.chmod(0o755)
    recipe = tmp_path / "hang.j2"
    recipe.write_text(f'{{% set meta = {{"repeat": 3, "arms": {{"hang": {{}}}}}} %}}\n{script} {tmp_path / "pids"}\n')
    return recipe


def assert_dead(pids_file):
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    gone, alive = psutil.wait_procs(procs, timeout=5)
    assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []


def test_hung_binary_is_killed_at_its_timeout_with_nothing_left(orch_exe, env, tmp_path):
    res = orch_run(orch_exe, hang_recipe(tmp_path), "--repeat", "1", "--timeout", "2", env=env)
    assert res.returncode == 15
    rows = db_rows(env, "SELECT status, failure_class, wall_s FROM runs")
    assert rows[0]["status"] == "timeout" and rows[0]["failure_class"] == "timeout" and rows[0]["wall_s"] < 30
    assert_dead(tmp_path / "pids")


def test_ctrl_c_mid_sweep_stores_the_run_as_interrupted(orch_exe, env, tmp_path):
    proc = subprocess.Popen(
        [orch_exe, "run", str(hang_recipe(tmp_path)), "--build", COMMIT, "--timeout", "120"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids = tmp_path / "pids"
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert db_rows(env, "SELECT status FROM sweeps") == [{"status": "interrupted"}]
    assert [r["status"] for r in db_rows(env, "SELECT status FROM runs")] == ["interrupted"]
    assert_dead(pids)


def test_show_parse_and_inspect_commands(orch_exe, env, tiny_dir, tmp_path):
    assert orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", env=env).returncode == 0
    (draft,) = [r["id"] for r in db_rows(env, "SELECT id FROM measured_runs WHERE arm = 'draft'")]  # 2, or its rerun
    shown = run_orch(orch_exe, "show", str(draft), env=env)
    assert shown.returncode == 0 and "executed_argv" in shown.stdout and "--spec-type" in shown.stdout
    assert "----- stderr" in shown.stdout and "n_drafted" in shown.stdout
    missing = run_orch(orch_exe, "show", "999", env=env)
    assert missing.returncode == NoSuchRun.exit_code and "no run 999" in missing.stderr

    import gzip

    log = tmp_path / "run.stderr"
    log.write_bytes(
        gzip.decompress(
            db_rows(env, "SELECT gz FROM run_logs WHERE run_id = ? AND stream = 'stderr'", [draft])[0]["gz"]
        )
    )
    parsed = json.loads(run_orch(orch_exe, "parse", str(log), "--json", env=env).stdout)
    stored = db_rows(env, "SELECT n_drafted, n_accepted, decode_tps FROM metrics WHERE run_id = ?", [draft])[0]
    assert (parsed["metrics"]["n_drafted"], parsed["metrics"]["n_accepted"]) == (
        stored["n_drafted"],
        stored["n_accepted"],
    )
    assert parsed["metrics"]["decode_tps"] == pytest.approx(stored["decode_tps"])

    info = json.loads(
        run_orch(orch_exe, "models", "inspect", str(tiny_dir / "tiny-target.gguf"), "--json", env=env).stdout
    )
    assert (info["architecture"], info["vocab_type"]) == ("llama", "llama") and info["parameters"] > 0
    bad = run_orch(orch_exe, "models", "inspect", str(log), env=env)
    assert bad.returncode == 11 and str(log) in bad.stderr
    empty = run_orch(orch_exe, "query", "SELECT * FROM runs WHERE false", "--format", "csv", env=env)
    assert empty.stdout.startswith("id,sweep_id,build_id,arm")


def test_a_prompt_carrying_metric_lines_forges_nothing_and_breaks_nothing(orch_exe, env):
    """llama-completion echoes the prompt on stdout; orch reads figures from stderr only."""
    forged = (
        "Copy this:\ndecoded 64 tokens in 0.001 seconds, speed: 64000.0 t/s\nn_predict = 3000000000\n"
        "encoded 5 tokens in 1.2.3 seconds, speed: 1.0 t/s\nerror loading model: out of memory\nThen go on."
    )
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", "--set", f"prompt={forged}", env=env)
    assert res.returncode == 0, res.stderr
    runs = db_rows(
        env,
        "SELECT r.arm, r.status, m.decode_tps, m.n_predict FROM measured_runs r JOIN metrics m "
        "ON m.run_id = r.id ORDER BY r.started_at",
    )
    assert [r["status"] for r in runs] == ["ok", "ok", "ok"]  # baseline, draft, control
    assert all(0 < r["decode_tps"] < 20000 for r in runs)  # the tiny models decode at 300-3000 tok/s here
    assert all(r["n_predict"] is None or r["n_predict"] < 1000 for r in runs)
    stdout = db_rows(env, "SELECT gz FROM run_logs WHERE stream = 'stdout' ORDER BY run_id")
    import gzip

    assert "64000.0 t/s" in gzip.decompress(stdout[0]["gz"]).decode(errors="replace")  # echoed, ignored


LOSES_ITS_TAIL = textwrap.dedent("""\
    #!{python}
    # llama-speculative-simple whose first {losses} runs lose their log's last lines (as llama.cpp's logger can at
    # exit on a busy machine, ggml-org/llama.cpp#22142) and exit 0; every later run is whole: the real one, run
    # again here while the real logger itself lost the tail (CI's machine did), so the test does not depend on load.
    import os, subprocess, sys
    real, count = {real!r}, {count!r}
    n = int(open(count).read()) if os.path.exists(count) else 0
    open(count, "w").write(str(n + 1))
    for attempt in range(20):
        res = subprocess.run([real, *sys.argv[1:]], capture_output=True)
        lines = res.stderr.decode(errors="replace").splitlines(keepends=True)
        target = next((i for i, line in enumerate(lines) if line.split()[-1:] == ["target:"]), None)
        if res.returncode or (target is not None and any("total time" in line for line in lines[target:])):
            break
    sys.stdout.buffer.write(res.stdout)
    if n < {losses}:
        lines = lines[:next(i for i, line in enumerate(lines) if "n_predict" in line) + 1]
    sys.stderr.write("".join(lines))
    sys.exit(res.returncode)
""")


@pytest.mark.parametrize("losses", [2, 3])
def test_a_run_whose_log_lost_its_last_lines_is_kept_failed_and_its_slot_run_again(
    orch_exe, env, real_build, tmp_path, losses
):
    """Each lost attempt stays stored, failed, with its logs; the slot runs again up to three times in all (CI once
    lost two in a row), and a slot that lost every attempt is a failed slot, never a run without its metrics."""
    wrapper = tmp_path / "bin" / "llama-speculative-simple"
    wrapper.parent.mkdir()
    wrapper.write_text(
        LOSES_ITS_TAIL.format(
            python=sys.executable,
            real=real_build.tool("llama-speculative-simple"),
            count=str(tmp_path / "count"),
            losses=losses,
        )
    )
    wrapper.chmod(0o755)
    recipe = tmp_path / "tail.j2"
    recipe.write_text(
        '{% set meta = {"repeat": 1, "arms": {"draft": {}}} %}\n'
        f"{wrapper} -m {{{{ models }}}}/tiny-target.gguf -md {{{{ models }}}}/tiny-draft.gguf "
        "--temp 0 --top-k 1 -n 16 -p hello\n"
    )
    res = orch_run(orch_exe, recipe, env=env)
    assert "exited 0 but its log lost its last lines" in res.stderr
    rows = db_rows(env, "SELECT id, status, failure_class, exit_code FROM runs ORDER BY id")
    lost = [("failed", "truncated_log", 0)] * min(losses, 3)
    whole = [("ok", None, 0)] if losses < 3 else []
    assert [(r["status"], r["failure_class"], r["exit_code"]) for r in rows] == lost + whole
    assert res.returncode == (0 if whole else 15), res.stderr
    assert [r["id"] for r in db_rows(env, "SELECT id FROM measured_runs")] == [rows[-1]["id"]]  # the slot's newest
    assert db_rows(env, "SELECT count(*) AS n FROM run_logs WHERE run_id = ?", [rows[0]["id"]])[0]["n"] == 2
