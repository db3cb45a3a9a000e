"""Acceptance figures of a method, end to end: llama-speculative-simple with an MTP head (the tiny qwen35 model of
`orch models tiny`) through `orch run`, stored, and shown by `orch summary`."""

import json

from integration.conftest import PLANNED, db_rows, orch_run, run_orch

# Window 1: every draft has one token, so the counters give sequence acceptance exactly. Window 3 at -lv 5:
# drafts of two or three tokens, exact from speculative-simple's one line per draft.
RECIPE = """{% set meta = {"mode": "cli", "repeat": 1, "defaults": {"window": 3, "lv": 4},
                           "arms": {"mtp-w1": {"window": 1}, "mtp-w3": {"lv": 5}}} %}
{{ bin }}/llama-speculative-simple -m {{ models }}/tiny-qwen35-mtp.gguf --spec-type draft-mtp
  --spec-draft-n-max {{ window }} -lv {{ lv }} -t 1 -c 4096 --temp 0 --top-k 1 --seed {{ seed }}
  -n {{ n_predict }} -p {{ prompt }}
"""


def test_mtp_runs_store_and_show_acceptance_by_position_and_sequence(orch_exe, env, tmp_path):
    recipe = tmp_path / "mtp.j2"
    recipe.write_text(RECIPE)
    res = orch_run(orch_exe, recipe, "--set", "n_predict=64", env=env)
    assert res.returncode == 0, res.stderr
    runs = {
        r["arm"]: r
        for r in db_rows(
            env,
            "SELECT r.arm, r.status, m.* FROM runs r JOIN metrics m "
            f"ON m.run_id = r.id WHERE r.{PLANNED} ORDER BY r.id",
        )
    }
    assert set(runs) == {"mtp-w1", "mtp-w3"} and all(r["status"] == "ok" for r in runs.values())
    for arm, window in (("mtp-w1", 1), ("mtp-w3", 3)):
        run = runs[arm]
        rates = json.loads(run["accept_rate_per_pos"])
        extra = json.loads(run["extra"])
        stats = extra["draft_stats"][0]
        assert run["spec_type"] == "draft-mtp" and run["n_drafted"] > 0
        assert 1 <= run["mean_accept_len"] <= 1 + window and 0 < len(rates) <= window
        assert rates == sorted(rates, reverse=True)  # position i+1 is accepted only after position i
        assert 0 <= run["seq_acceptance"] <= 1
        # mean length = 1 + accepted / accept calls, as the statistics line prints it (2 decimals)
        assert abs(run["mean_accept_len"] - (1 + stats["acc_tokens"] / stats["calls_accept"])) <= 0.005
        assert extra["seq_acceptance_source"] == ("counters" if window == 1 else "draft lines")
    # One-token drafts: accepted in full exactly when their one position was.
    assert runs["mtp-w1"]["seq_acceptance"] == json.loads(runs["mtp-w1"]["accept_rate_per_pos"])[0]
    # Drafts accepted in full never outnumber those that reached the last position of the window... plus the
    # drafts shorter than the window; and never exceed the drafts whose first token was accepted.
    w3 = runs["mtp-w3"]
    assert (
        w3["seq_acceptance"]
        <= json.loads(w3["extra"])["draft_stats"][0]["acc_drafts"]
        / json.loads(w3["extra"])["draft_stats"][0]["gen_drafts"]
    )

    shown = run_orch(orch_exe, "summary", "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    by_arm = {r["arm"]: r for r in json.loads(shown.stdout)}
    for arm, run in runs.items():
        assert by_arm[arm]["mean_accept_len"] == run["mean_accept_len"]
        assert by_arm[arm]["seq_acceptance"] == run["seq_acceptance"]
    wide = run_orch(orch_exe, "summary", "--wide", env=env)
    assert "mean_accept_len" in wide.stdout and "seq_acceptance" in wide.stdout


SERVER_RECIPE = """{% set meta = {"mode": "server", "repeat": 2, "arms": {"mtp": {}}} %}
{{ bin }}/llama-server -m {{ models }}/tiny-qwen35-mtp.gguf --spec-type draft-mtp --spec-draft-n-max 3 -t 1 -c 4096
"""


def test_a_server_run_takes_its_acceptance_from_the_metrics_counters_over_the_run(orch_exe, env, tmp_path):
    """Two runs on one server: each run's figures are its own (the counters' growth), not the server's lifetime
    statistics line, which by the second run also counts the warm-up and the first run."""
    recipe = tmp_path / "mtp_server.j2"
    recipe.write_text(SERVER_RECIPE)
    res = orch_run(orch_exe, recipe, "--set", "n_predict=32", env=env)
    assert res.returncode == 0, res.stderr
    runs = db_rows(env, "SELECT r.id, m.* FROM measured_runs r JOIN metrics m ON m.run_id = r.id ORDER BY r.id")
    assert len(runs) == 2
    for run in runs:
        delta = json.loads(run["extra"])["metrics_delta"]
        steps = delta["spec_decode_num_drafts_total"]
        assert steps > 0 and delta["spec_decode_num_draft_tokens_total"] == run["n_drafted"]
        assert run["mean_accept_len"] == 1 + delta["spec_decode_num_accepted_tokens_total"] / steps
        per_pos = [delta[f'spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}'] / steps for i in range(3)]
        assert json.loads(run["accept_rate_per_pos"]) == per_pos and run["spec_type"] == "draft-mtp"
        low, high = run["seq_acceptance_low"], run["seq_acceptance_high"]
        assert 0 <= low <= high <= 1
        assert run["seq_acceptance"] is None or run["seq_acceptance"] == low == high
