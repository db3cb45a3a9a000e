"""Predict before running (issue 46) on real binaries and the tiny models: a sweep probes this machine's costs and
the pair's acceptance where none is stored, and stores each drafting arm's prediction before its first run; a
stored probe is reused, and another thread count or model makes it stale; the summary shows the prediction
beside the measurement and flags one measured outside it, naming the input that was off. No test asserts a
speed or an error size."""

import json
from pathlib import Path

from integration.conftest import COMMIT, db_rows, orch_run, run_orch

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
TINY = ROOT / "recipes" / "tiny.toml"


def test_a_sweep_stores_each_drafting_arms_prediction_before_its_first_run(orch_exe, env):
    res = orch_run(orch_exe, RECIPE_A, "--vars", str(TINY), "--repeat", "1", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stderr.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith("orch: draft: predicted "))
    assert said < next(i for i, line in enumerate(lines) if line.startswith("orch: sweep 1:"))
    (made,) = db_rows(env, "SELECT arm, predicted, low, high, made_at, acceptance_probe_id FROM arm_predictions")
    assert made["arm"] == "draft" and 0 < made["low"] <= made["predicted"] <= made["high"]
    first = db_rows(env, "SELECT min(started_at) AS t FROM runs")[0]["t"]
    assert made["made_at"] <= first  # before any run of the sweep, the draft's first among them
    # what it was made of: the target's and the draft's passes of 1..17 tokens, and one acceptance probe
    passes = db_rows(env, "SELECT model_sha256, count(*) AS n FROM cost_probes GROUP BY ALL ORDER BY n")
    assert [p["n"] for p in passes] == [17, 17]
    assert db_rows(env, "SELECT id FROM acceptance_probes") == [{"id": made["acceptance_probe_id"]}]
    shown = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    assert shown["draft"]["predicted"] == made["predicted"] and shown["draft"]["predicted_low"] == made["low"]
    assert shown["baseline"]["predicted"] is None and shown["control:llama-speculative-simple"]["predicted"] is None
    table = run_orch(orch_exe, "summary", env=env).stdout
    # under the table, the drafting arm's prediction beside its measurement (the why table)
    (why,) = [line for line in table.split("\nwhy ", 1)[1].splitlines() if line.startswith("draft ")]
    assert why.split()[1] == f"{made['predicted']:.2f}x" and why.split()[4] == f"{shown['draft']['speedup']:.2f}x"


def test_a_dry_run_predicts_from_stored_probes_only_and_writes_nothing(orch_exe, env):
    dry = orch_run(orch_exe, RECIPE_A, "--vars", str(TINY), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert "draft: no prediction: no probe stored" in dry.stdout and not Path(env["ORCH_DB"]).exists()
    probed = run_orch(orch_exe, "probe", str(RECIPE_A), "--vars", str(TINY), "--build", COMMIT, env=env)
    assert probed.returncode == 0, probed.stderr
    again = orch_run(orch_exe, RECIPE_A, "--vars", str(TINY), "--dry-run", "--json", env=env)
    (predicted,) = json.loads(again.stdout)["predictions"]
    assert predicted["arm"] == "draft" and predicted["predicted"] > 0 and predicted["missing"] is None


def test_a_stored_probe_is_reused_until_the_thread_count_or_the_model_changes(orch_exe, env):
    def probe(*extra):
        res = run_orch(
            orch_exe, "probe", str(RECIPE_A), "--vars", str(TINY), "--build", COMMIT, "--json", *extra, env=env
        )
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def stored():
        return db_rows(env, "SELECT count(*) AS n FROM cost_probes")[0]["n"]

    first = probe()
    assert not any(r["stored"] for r in first["costs"]) and first["predictions"][0]["predicted"] > 0
    rows = stored()
    second = probe()
    assert all(r["stored"] for r in second["costs"]) and stored() == rows
    assert db_rows(env, "SELECT count(*) AS n FROM acceptance_probes")[0]["n"] == 1
    threads = probe("--set", "threads=2")  # another thread count: both models probed anew
    assert not any(r["stored"] for r in threads["costs"]) and stored() == 2 * rows
    assert {r["threads"] for r in threads["costs"]} == {2}
    model = probe("--set", "draft=tiny-quality-draft.gguf", "--set", "target=tiny-quality.gguf")
    assert not any(r["stored"] for r in model["costs"]) and stored() == 3 * rows


def test_a_draft_on_fewer_threads_is_timed_at_them_for_a_step_and_at_the_batch_threads_beyond(orch_exe, env):
    """-td 1 beside -t 2: llama.cpp decodes the draft's single tokens on one thread and its batches (the pass it reads
    before drafting again) at -tbd, which defaults to the target's -tb, that is -t: two threads."""
    res = run_orch(
        orch_exe,
        "probe",
        str(ROOT / "recipes" / "pair_draft_sweep.j2"),
        "--vars",
        str(TINY),
        "--set",
        "threads=2",
        "--arms",
        "draft-1-thread:draft_max=2",
        "--build",
        COMMIT,
        "--json",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)
    drafts = {}
    for row in shown["costs"]:
        if row["role"] == "draft":
            drafts.setdefault(row["threads"], []).append(row["tokens"])
    assert drafts == {1: [1], 2: list(range(1, 18))}
    (predicted,) = shown["predictions"]
    assert predicted["arm"] == "draft-1-thread:draft_max=2" and predicted["predicted"] > 0


def test_an_arm_measured_outside_its_prediction_is_flagged_with_the_input_that_was_off(orch_exe, env):
    res = orch_run(orch_exe, RECIPE_A, "--vars", str(TINY), "--repeat", "1", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    measured = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    tokens = measured["draft"]["mean_accept_len"]
    # A prediction nothing measured can match: far above, with the pair's own acceptance (so the cost was off)
    run_orch(
        orch_exe,
        "query",
        "--write",
        f"UPDATE arm_predictions SET predicted = 50, low = 40, high = 60, mean_accept_len = {tokens}",
        env=env,
    )
    shown = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    assert "outside_prediction" in shown["draft"]["warnings"] and shown["draft"]["predicted"] == 50
    (message,) = [m for m in shown["draft"]["warning_messages"] if "predicted before it ran" in m]
    assert "the cost was off" in message and "slower" in message
    run_orch(orch_exe, "query", "--write", f"UPDATE arm_predictions SET mean_accept_len = {tokens * 2}", env=env)
    shown = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "--format", "json", env=env).stdout)}
    (message,) = [m for m in shown["draft"]["warning_messages"] if "predicted before it ran" in m]
    assert "the acceptance was off" in message


def test_a_probe_run_whose_log_lost_its_tail_is_run_again(orch_exe, env, real_build, tmp_path):
    """llama.cpp's logger can lose a log's last lines at exit on a busy machine: the acceptance probe's runs are run
    again while theirs did (as a sweep's are), so a loaded machine still gets its prediction."""
    import sys

    from integration.test_run_cli import LOSES_ITS_TAIL

    wrapper = tmp_path / "bin" / "llama-speculative-simple"
    wrapper.parent.mkdir()
    wrapper.write_text(
        LOSES_ITS_TAIL.format(
            python=sys.executable,
            real=real_build.tool("llama-speculative-simple"),
            count=str(tmp_path / "count"),
            losses=2,
        )
    )
    wrapper.chmod(0o755)
    recipe = tmp_path / "tail.j2"
    recipe.write_text(
        '{% set meta = {"repeat": 1, "defaults": {"draft": "tiny-draft.gguf"}, "baseline": "baseline", '
        '"arms": {"baseline": {"draft": none}, "draft": {}}} %}\n'
        f"{{% if draft %}}{wrapper} -m {{{{ models }}}}/tiny-target.gguf -md {{{{ models }}}}/{{{{ draft }}}} "
        "--draft-max 4{% else %}{{ bin }}/llama-completion -m {{ models }}/tiny-target.gguf -no-cnv"
        "{% endif %} --temp 0 --top-k 1 -n 32 -p hello\n"
    )
    res = orch_run(orch_exe, recipe, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    (made,) = db_rows(env, "SELECT predicted, missing FROM arm_predictions")
    assert made["missing"] is None and made["predicted"] > 0, made
    assert int((tmp_path / "count").read_text()) >= 2 + 2 + 2  # two lost plain runs, then the probe and the sweep


def test_another_hosts_imported_costs_price_the_pairs_acceptance_measured_here(orch_exe, env, tmp_path):
    """A results file from another machine (here: this machine's probe, its rows made another host's, with a pass
    of b tokens costing what one token costs, as on a GPU whose target is memory-bound) travels in `orch export`
    with no sweep in it; imported, `orch probe --host` predicts for that host from its costs, times nothing, and
    ends with its best setting's command line."""
    probed = run_orch(orch_exe, "probe", str(RECIPE_A), "--vars", str(TINY), "--build", COMMIT, "--json", env=env)
    assert probed.returncode == 0, probed.stderr
    here = json.loads(probed.stdout)["predictions"][0]
    there = {**env, "ORCH_DB": str(tmp_path / "gpu-box.duckdb")}
    import_here = run_orch(orch_exe, "import", env["ORCH_DB"], env=there)
    assert import_here.returncode == 0, import_here.stderr
    flat = run_orch(
        orch_exe,
        "query",
        "--write",
        "UPDATE cost_probes SET host_id = 'feedc0de00000000', host_name = "
        "'gpu-box', ms = ms / batch, samples_ms = to_json(list_transform(from_json(samples_ms, "
        "'[\"DOUBLE\"]'), lambda x: x / batch)), uid = gen_random_uuid()::VARCHAR",
        env=there,
    )
    assert flat.returncode == 0, flat.stderr
    exported = run_orch(orch_exe, "export", "--out", str(tmp_path / "export"), env=there)
    assert exported.returncode == 0, exported.stderr
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["tables"]["cost_probes"] == 34
    assert run_orch(orch_exe, "import", str(tmp_path / "export"), env=env).returncode == 0
    count = db_rows(env, "SELECT count(*) AS n FROM cost_probes")[0]["n"]
    res = run_orch(
        orch_exe, "probe", str(RECIPE_A), "--vars", str(TINY), "--build", COMMIT, "--host", "gpu-box", "--json", env=env
    )
    assert res.returncode == 0, res.stderr
    (host,) = json.loads(res.stdout)
    assert host["host"] == "gpu-box" and db_rows(env, "SELECT count(*) AS n FROM cost_probes")[0]["n"] == count
    (draft,) = host["predictions"]
    assert draft["predicted"] > 0 and draft["missing"] is None
    # its passes cost what one token costs there: fewer target steps a pass than here, priced from its rows
    assert draft["verify_target_steps"] < here["verify_target_steps"]
    assert {c["ms"] for c in host["costs"] if c["role"] == "target"} <= {
        round(r["ms"], 2) for r in db_rows(env, "SELECT ms FROM cost_probes WHERE host_name = 'gpu-box'")
    }
    assert host["command"] and host["best"]
    unknown = run_orch(orch_exe, "probe", str(RECIPE_A), "--vars", str(TINY), "--host", "nowhere", env=env)
    assert unknown.returncode != 0 and "the hosts with costs: " in unknown.stderr and "gpu-box" in unknown.stderr
