"""`orch logs` then `orch parse`: a stored run's logs, written back out, read back to the metrics and the failure
class orch stored, for CLI runs, llama-server runs (fresh and reused server) and failed runs of both."""

import json
from pathlib import Path

import pytest

from integration.conftest import db_rows, orch_run, run_orch

ROOT = Path(__file__).resolve().parents[2]
RECIPE_A = ROOT / "recipes" / "recipe_a.j2"
SERVER_SPEC = ROOT / "recipes" / "server_spec.j2"
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")
THREE_PROMPTS = str(ROOT / "tests" / "fixtures" / "logs" / "three.jsonl")
METRICS = (
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
    "seq_acceptance",
    "spec_type",
)
NOT_IN_A_SERVER_LOG = {"n_draft_max", "load_ms", "total_ms"}  # the run's wall clock, the CLI tools' settings
# A server run reads these from its /metrics counters; a log gives them by pooling its requests' lines, where every
# request's step count can be told (parse/acceptance.from_request_lines), and then they must agree.
POOLED_FROM_REQUESTS = {"mean_accept_len", "accept_rate_per_pos", "seq_acceptance"}


def read_back(orch_exe, env, run_id, out: Path) -> dict:
    """orch logs RUN --out DIR, then orch parse on every file it printed."""
    written = run_orch(orch_exe, "logs", str(run_id), "--out", str(out), env=env)
    assert written.returncode == 0, written.stderr
    paths = written.stdout.split()
    assert paths and all(Path(p).parent == out and Path(p).name.startswith(f"run-{run_id}.") for p in paths)
    parsed = run_orch(orch_exe, "parse", *paths, "--json", env=env)
    assert parsed.returncode == 0, parsed.stderr
    return json.loads(parsed.stdout)


def stored(env, table: str = "runs") -> list[dict]:
    """Every stored run, or one per slot (measured_runs: a run whose log lost its tail under load runs again)."""
    rows = db_rows(
        env,
        f"SELECT r.id, r.arm, r.mode, r.status, r.failure_class, {', '.join('m.' + k for k in METRICS)} "
        f"FROM {table} r LEFT JOIN metrics m ON m.run_id = r.id ORDER BY r.id",
    )
    for row in rows:
        row["accept_rate_per_pos"] = json.loads(row["accept_rate_per_pos"] or "null")
    return rows


# A server run's times and rates pool its requests' milliseconds, which its log prints to 0.01 (HTTP timings,
# which orch stores, have them whole): off by up to 0.005 ms per request, a share of the pooled time that grows
# as the tiny model's prompt evaluations take a millisecond or two (0.33% seen in CI).
POOLED_MS = {
    "encode_tps": "prompt_eval_ms",
    "prompt_eval_ms": "prompt_eval_ms",
    "decode_tps": "eval_ms",
    "eval_ms": "eval_ms",
}
REQUESTS = 3  # THREE_PROMPTS


def assert_same_metrics(got: dict, want: dict, *, server: bool):
    for key in METRICS:
        if server and key in NOT_IN_A_SERVER_LOG:
            assert got[key] is None, key
        elif server and key in POOLED_FROM_REQUESTS and got[key] is None:
            continue
        elif isinstance(want[key], float):
            # A CLI run: the same parser on the same bytes. A server run: within the log's rounding.
            rel = 1e-12
            if server:
                ms = want.get(POOLED_MS.get(key))
                rel = max(2e-3, 0.005 * REQUESTS / ms * 1.01) if ms else 2e-3
            assert got[key] == pytest.approx(want[key], rel=rel), key
        else:
            assert got[key] == want[key], key


def test_cli_runs_read_back_to_their_stored_metrics(orch_exe, env, tmp_path):
    res = orch_run(orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", "--set", "n_predict=32", env=env)
    assert res.returncode == 0, res.stderr
    runs = stored(env, "measured_runs")
    # baseline, draft, control; and the control again at the draft's count where it decoded past -n
    assert [r["status"] for r in runs] in (["ok"] * 3, ["ok"] * 4)
    for lost in [r for r in stored(env) if r["id"] not in {m["id"] for m in runs}]:  # lost its tail: run again
        assert read_back(orch_exe, env, lost["id"], tmp_path / "lost")["failure_class"] == "truncated_log"
    kinds = {}
    for run in runs:
        reading = read_back(orch_exe, env, run["id"], tmp_path / "out")
        assert reading["failure_class"] is None
        assert_same_metrics(reading["metrics"], run, server=False)
        kinds[run["arm"]] = reading["kind"]
        assert {f["role"] for f in reading["files"]} <= {"log", "output", "empty"}
    assert kinds == {
        "baseline": "completion",
        "draft": "speculative",
        "control:llama-speculative-simple": "speculative",
        **({"control~draft": "speculative"} if len(runs) == 4 else {}),
    }


def test_server_runs_read_back_pooled_like_the_stored_run(orch_exe, env, tmp_path):
    res = orch_run(
        orch_exe,
        SERVER_SPEC,
        "--vars",
        TINY_VARS,
        "--set",
        "n_predict=16",
        "--set",
        f"prompt_set={THREE_PROMPTS}",
        "--repeat",
        "2",
        "--order",
        "sequential",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    runs = stored(env)
    assert len(runs) == 6 and {r["status"] for r in runs} == {"ok"}
    warmups = []
    for run in runs:
        reading = read_back(orch_exe, env, run["id"], tmp_path / "out")
        assert (reading["kind"], reading["failure_class"]) == ("server", None)
        assert_same_metrics(reading["metrics"], run, server=True)
        warmups.append(any(note.startswith("left out task") for note in reading["notes"]))
    # Sequential order: each arm's first run starts its server (warm-up left out), its second reuses it.
    assert warmups == [True, False] * 3
    drafted = [r for r in runs if r["arm"] == "draft"]
    assert all(r["n_drafted"] > 0 for r in drafted)


def test_failed_runs_read_back_to_their_stored_class(orch_exe, env, tmp_path):
    # Without the dialect layer, recipe A's draft arm passes --draft-max, which 0c1e57098 has removed.
    res = orch_run(
        orch_exe, RECIPE_A, "--vars", TINY_VARS, "--repeat", "1", "--no-dialect", "--set", "n_predict=16", env=env
    )
    assert res.returncode == 15
    fallback = tmp_path / "fallback.j2"  # a server with a draft model but no --spec-type: it never drafts
    fallback.write_text(
        '{% set meta = {"mode": "server", "arms": {"draft": {}}} %}\n'
        "{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -md {{ models }}/tiny-draft.gguf "
        "-t 1\n"
    )
    assert orch_run(orch_exe, fallback, "--no-dialect", "--set", "n_predict=8", env=env).returncode == 15
    failed = [r for r in stored(env) if r["status"] != "ok"]
    assert [(r["mode"], r["failure_class"]) for r in failed if r["failure_class"] != "truncated_log"] == [
        ("cli", "unknown_flag"),
        ("server", "spec_not_engaged"),
    ]  # and any run whose log lost its tail under load
    for run in failed:
        reading = read_back(orch_exe, env, run["id"], tmp_path / f"run-{run['id']}")
        assert reading["failure_class"] == run["failure_class"], reading
    gone = run_orch(orch_exe, "logs", "4242", env=env)
    assert gone.returncode == 18 and gone.stderr.count("\n") == 1
