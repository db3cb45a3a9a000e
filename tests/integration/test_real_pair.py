"""The real Qwen2.5-Coder pair (1.5B target, 0.5B draft, `orch models get qwen2.5-coder-pair`) on the demo's
recipe (recipes/real_pair.j2), once for the module on one workload, one repeat, 32 tokens: behaviour on real
weights, never a speed. The draft model drafts and its tokens are accepted; every draft arm is compared with its
control (the same program drafting nothing) on the same tokens, and a difference is shown with its first
differing token; acceptance by position is over the drafts made; an arm that lost says where its time went, from
the build's own statistics; the catalogue's copy is verified offline the second time."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import readme_examples

from integration.conftest import CACHE, COMMIT, db_rows, demo_commands, run_orch

ROOT = Path(__file__).resolve().parents[2]
DRAFT_ARMS = ("draft-2", "draft-6", "draft-seed")


@pytest.fixture(scope="module")
def pair_run(orch_exe, cache_env, pair_dir, real_build, tmp_path_factory) -> dict:
    """real_pair.j2 on the code completion workload, once for the module, at one thread (the suite runs two test
    files at once on two cores: see test_real_model.gemma_demo); its env (results.duckdb) and the summary's JSON."""
    work = tmp_path_factory.mktemp("real-pair")
    env = {**cache_env, "ORCH_MODELS": str(pair_dir), "ORCH_DB": str(work / "results.duckdb")}
    res = subprocess.run(
        [
            orch_exe,
            "run",
            str(ROOT / "recipes" / "real_pair.j2"),
            "--build",
            COMMIT,
            "--vars",
            str(ROOT / "recipes" / "workloads" / "code_complete.toml"),
            "--repeat",
            "1",
            "--set",
            "threads=1",
            "--set",
            "n_predict=32",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    shown = run_orch(orch_exe, "summary", "1", "--format", "json", env=env)
    table = run_orch(orch_exe, "summary", "1", env=env)
    explained = run_orch(orch_exe, "summary", "1", "--explain", env=env)
    assert shown.returncode == table.returncode == explained.returncode == 0, shown.stderr + table.stderr
    return {
        "env": env,
        "rows": {r["arm"]: r for r in json.loads(shown.stdout)},
        "verdict": explained.stdout,
        "table": table.stdout,
    }


def _runs(env) -> list[dict]:
    return db_rows(
        env,
        """
        SELECT r.arm, r.is_control, r.reference_arm, r.repeat_index, r.params, m.n_generated, m.n_drafted,
               m.n_accepted, m.accept_rate_per_pos, m.outputs_compared, m.outputs_differ, m.first_diff_token,
               m.first_diff_margin, m.first_diff_top_two, m.extra->'$.draft_stats' AS stats
        FROM measured_runs r JOIN metrics m ON m.run_id = r.id WHERE r.status = 'ok' ORDER BY r.id""",
    )


def test_the_draft_model_drafts_and_is_accepted_and_each_arm_is_compared_on_the_same_tokens(pair_run):
    runs = _runs(pair_run["env"])
    by_slot = {(r["arm"], r["repeat_index"]): r for r in runs}
    for arm in DRAFT_ARMS:
        (run,) = [r for r in runs if r["arm"] == arm]
        stats = json.loads(run["stats"])[0]
        assert stats["impl"] == "draft-simple" and stats["calls_gen"] > 0, (arm, stats)
        if not run["n_drafted"]:
            continue  # the seed's p_min 0.9 may throw every draft away: then its statistics say so, below
        assert run["n_accepted"] > 0, arm  # a same-family draft agrees with its target on code
        reference = by_slot[(run["reference_arm"], run["repeat_index"])]
        assert reference["is_control"] and reference["n_generated"] == run["n_generated"], (arm, reference["arm"])
        assert run["outputs_compared"] == 1  # parity against the control, on those same tokens
        if run["outputs_differ"]:  # batched verification changed the target's arithmetic: a finding, located,
            # and the target's top two there asked of the build's server (a near tie is named only where they show it)
            assert run["first_diff_token"] is not None and run["first_diff_margin"] >= 0, arm
            assert run["first_diff_top_two"] is not None, arm
        # by position over the drafts made: never above 1, and the first position's count is drafts accepted
        rates = json.loads(run["accept_rate_per_pos"])
        assert all(0 <= x <= 1 for x in rates) and stats["gen_drafts"] >= 1
        assert round(rates[0] * stats["gen_drafts"]) == stats["acc_drafts"], (arm, rates, stats)
    assert any(r["n_drafted"] for r in runs if r["arm"] in DRAFT_ARMS)


def test_an_arm_that_lost_says_where_its_time_went_from_the_builds_statistics(pair_run):
    """Under the table, a row per drafting arm (predicted, measured, tokens a pass, drafting ms a token, a pass in
    target steps, break-even); --explain says each losing arm's split in words."""
    rows = pair_run["rows"]
    why = pair_run["table"].split("\nwhy ", 1)[1].split("\nwhy: ", 1)[0].splitlines()[2:]  # under its header
    # a speculating arm, with something to show: an arm with no prediction that drafted nothing (no split, no
    # speedup) is left to the verdict (why_table.rows_of), as an n-gram arm may be on some text
    speculating = [a for a in rows if rows[a]["time_split"] or rows[a]["predicted"] or rows[a]["prediction_missing"]]
    assert [line.split()[0] for line in why] == [
        a
        for a in speculating
        if rows[a]["time_split"] or rows[a]["predicted"] is not None or rows[a]["speedup"] is not None
    ]
    verdict = " ".join(pair_run["verdict"].split("verdict: ", 1)[1].split())  # unwrapped, whole (--explain)
    assert verdict.startswith(f"sweep 1 (real_pair.j2 on code_complete, {COMMIT}-cpu): ")
    for arm in DRAFT_ARMS:
        row, split = rows[arm], rows[arm]["time_split"]
        if split is None:
            assert not row["drafted"], arm  # no pass to split: it drafted nothing
            continue
        assert 0 <= split["drafts_made"] <= split["draft_calls"] and split["drafting_ms_per_token"] > 0
        (shown,) = [re.split(r"\s{2,}", line.strip()) for line in why if line.startswith(arm + " ")]
        assert f"{split['tokens_per_pass']:.2f}" in shown and f"{split['pass_target_steps']:.2f}" in shown
        assert ("no acceptance can pay" in shown) == (split["break_even_acceptance"] > 1), (arm, shown)
        assert split["drafts_thrown_away"] == split["draft_calls"] - split["drafts_made"]
        if row["speedup"] is not None and row["speedup"] < 1:
            assert row["why_slower"].startswith(f"{arm} at {row['speedup']:.2f}x: a token cost ")
            assert "ms drafting" in row["why_slower"] and row["why_slower"] in verdict
            if split["drafts_thrown_away"]:
                assert (
                    f"{split['drafts_thrown_away']} of {split['draft_calls']} draft calls made no draft"
                    in row["why_slower"]
                )
        else:
            assert row["why_slower"] is None


def test_the_pair_is_verified_offline_the_second_time(orch_exe, pair_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "PIP_"))}
    env.update(
        ORCH_CACHE=str(CACHE / "orch-cache"), PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple/"
    )  # nothing listens: a fetch would fail
    res = run_orch(orch_exe, "models", "get", "qwen2.5-coder-pair", "--out", str(pair_dir), env=env)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("already there, verified") == 2
    assert res.stdout.splitlines() == [
        "qwen2.5-coder-1.5b: none stated by the packages; upstream Qwen2.5-Coder-1.5B-Instruct is Apache-2.0",
        str(pair_dir / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
        "qwen2.5-coder-0.5b: none stated by the packages; upstream Qwen2.5-Coder-0.5B-Instruct is Apache-2.0",
        str(pair_dir / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ]


def test_the_readme_shows_what_make_demo_runs_and_prints_on_the_pair(pair_run):
    """make demo runs real_pair.j2 on the code, list and story workloads; the README's table of it (and
    getting-started's copy) has the arms, title and verdict that run prints for its first workload: here one repeat
    of it (the full demo takes minutes), so the figures differ, the table's shape does not."""
    runs = demo_commands("demo")  # the three sweeps, their summary, then a tune (test_tune_space checks its line)
    assert [c[0] for c in runs[3:]] == ["summary", "tune"]
    assert [(c[1], c[5]) for c in runs[:3]] == [
        ("recipes/real_pair.j2", f"recipes/workloads/{w}.toml") for w in ("code_complete", "repeat_list", "open_prose")
    ]
    (readme,) = [b.text for b in readme_examples.blocks() if b.kind == "output" and "real_pair.j2" in b.text]
    page = (ROOT / "docs" / "getting-started.md").read_text()
    assert [b.text for b in readme_examples.blocks(page) if "real_pair.j2" in b.text] == [readme]
    shown = readme_examples.shape(readme)
    first_sweep = shown["arms"][: shown["arms"].index("baseline", 1)]
    printed = readme_examples.shape(pair_run["table"])
    assert [a for a in first_sweep if "~" not in a] == [a for a in printed["arms"] if "~" not in a]
    assert shown["verdicts"][0] == printed["verdicts"][0]  # one sweep alone prints no title line
    assert {"arm", "decode_tps", "acceptance", "speedup", "speedup_ci95", "warnings"} <= set(shown["header"])


SERVER_SPEC = ROOT / "recipes" / "server_spec.j2"
CODE_PROMPTS = [
    {"id": "fib", "category": "code", "prompt": "def fibonacci(n: int) -> list[int]:\n"},
    {"id": "sort", "category": "code", "prompt": "def bubble_sort(items: list[int]) -> list[int]:\n"},
    {"id": "rev", "category": "code", "prompt": "def reverse_words(text: str) -> str:\n"},
    {"id": "even", "category": "code", "prompt": "def is_even(n: int) -> bool:\n"},
]


@pytest.mark.parametrize("clients", [1, 4])
def test_llama_server_with_the_real_draft_drafts_per_request_and_keeps_the_servers_text(
    orch_exe, cache_env, pair_dir, real_build, tmp_path, clients
):
    """llama-server --model-draft on the pair, one client and four: every request's drafted and accepted counts and
    timings are stored, its text is compared with the same server's without a draft (a difference located), and
    the summary's verdict follows the same rules as the CLI's."""
    prompts = tmp_path / "code.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in CODE_PROMPTS))
    env = {**cache_env, "ORCH_MODELS": str(pair_dir), "ORCH_DB": str(tmp_path / "results.duckdb")}
    res = run_orch(
        orch_exe,
        "run",
        str(SERVER_SPEC),
        "--build",
        COMMIT,
        "--set",
        "target=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "--set",
        "draft=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "--set",
        "ngl=0",
        "--set",
        "ngld=0",
        "--set",
        "ctx=1024",
        "--set",
        "draft_max=2",
        "--set",
        "p_min=0.5",
        "--set",
        "threads=1",
        "--set",
        "n_predict=24",
        "--set",
        f"prompt_set={prompts}",
        "--set",
        f"concurrency={clients}",
        env=env,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    requests = db_rows(
        env,
        """
        SELECT r.arm, q.client, q.draft_n, q.draft_n_accepted, q.predicted_n, q.predicted_ms, q.output_chars
        FROM runs r JOIN requests q ON q.run_id = r.id WHERE r.status = 'ok'""",
    )
    drafted = [q for q in requests if q["arm"] == "draft"]
    assert len(drafted) == len(CODE_PROMPTS) and len({q["client"] for q in drafted}) == clients
    assert all(q["draft_n"] > 0 and q["predicted_n"] > 0 and q["predicted_ms"] > 0 for q in drafted)
    assert sum(q["draft_n_accepted"] for q in drafted) > 0  # the same-family draft agrees with its target on code
    assert all(q["draft_n"] == 0 for q in requests if q["arm"] == "baseline")
    (draft,) = db_rows(
        env,
        "SELECT m.outputs_compared, m.outputs_differ, m.first_diff_char FROM runs r "
        "JOIN metrics m ON m.run_id = r.id WHERE r.arm = 'draft'",
    )
    assert draft["outputs_compared"] == len(CODE_PROMPTS)  # every request against the server without a draft
    assert (draft["first_diff_char"] is not None) == bool(draft["outputs_differ"])
    rows = {r["arm"]: r for r in json.loads(run_orch(orch_exe, "summary", "1", "--format", "json", env=env).stdout)}
    assert rows["draft"]["vs"] == "baseline" and rows["draft"]["speedup"] > 0  # the same server, drafting nothing
    assert rows["draft"]["acceptance"] is not None and rows["draft"]["drafted"] > 0
    verdict = " ".join(run_orch(orch_exe, "summary", "1", env=env).stdout.split("verdict: ", 1)[1].split())
    assert verdict.startswith(f"sweep 1 (server_spec.j2, {COMMIT}-cpu): ")
    if not rows["ngram"]["drafted"]:  # an n-gram arm that found nothing to draft is never the best arm
        assert "best ngram" not in verdict and "ngram at" not in verdict.split(". ")[0]
