"""The real Gemma 3 270M on the n-gram demo recipe (recipes/real_demo.j2), read from `make demo-gemma`'s own sweeps
(run once for the module: gemma_demo, whose table docs/getting-started.md shows), two of its workloads: behaviour, not timing. The
base model loops on an open story at temperature 0, and copies a list the prompt repeats: the loop is flagged and
never a win, the literal repetition is not flagged; parity is against the same program drafting nothing; every run
stores how many tokens it generated, and each arm's speedup pairs runs of equal counts (its control runs again at
the count an arm decoded past -n)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import readme_examples

from integration.conftest import COMMIT, assert_prediction_checked, db_rows, demo_commands, run_orch
from orchestrator.models import tokens
from orchestrator.parse import output

ROOT = Path(__file__).resolve().parents[2]
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture
def real_env(cache_env, gemma_dir, real_build, tmp_path):
    return {**cache_env, "ORCH_MODELS": str(gemma_dir), "ORCH_DB": str(tmp_path / "results.duckdb")}


@pytest.fixture(scope="module")
def gemma_demo(orch_exe, cache_env, gemma_dir, real_build, tmp_path_factory) -> tuple[Path, str]:
    """`make demo-gemma`'s own commands on the real Gemma 3 270M, once for the module: (its folder, holding
    results.duckdb, and what its last command, the summary, printed). Sweeps 1-4: DEMO_SWEEPS. At one thread,
    not the recipe's two: the suite runs two test files at once on two cores, and two llama.cpp threads that
    share their cores with another program spin against it (a 1.5 s run took 20 s); the demo's text, tables and
    verdicts do not depend on the thread count, only its speeds. Only the list's sweep predicts first (the why
    table's predicted column is then blank on the others' arms; the table's shape is the same)."""
    work = tmp_path_factory.mktemp("real-demo")
    (work / "recipes").symlink_to(ROOT / "recipes")
    env = {**cache_env, "ORCH_MODELS": str(gemma_dir), "ORCH_DB": str(work / "results.duckdb")}
    *runs, last = demo_commands("demo-gemma")
    assert [c[:2] for c in runs] == [["run", "recipes/real_demo.j2"]] * 4
    for command in runs:  # predictions (a lookup probe per n-gram arm) on the list only: the suite's time
        predicts = [] if "repeat_list" in " ".join(command) else ["--no-predict"]
        res = subprocess.run(
            [orch_exe, *command, "--set", "threads=1", *predicts],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert res.returncode == 0, res.stderr
    res = subprocess.run([orch_exe, *last], env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return work, res.stdout


@pytest.fixture
def demo_env(gemma_demo, real_env):
    """A copy of `make demo-gemma`'s results file: sweeps 1-4 are its workloads in the Makefile's order, three repeats
    each."""
    shutil.copy(gemma_demo[0] / "results.duckdb", real_env["ORCH_DB"])
    return real_env


def test_getting_started_shows_the_table_make_demo_gemma_prints(gemma_demo):
    page = ROOT / "docs" / "getting-started.md"
    (gemma_block,) = [
        b
        for b in readme_examples.blocks(page.read_text(), "docs/getting-started.md")
        if b.kind == "output" and "real_demo.j2" in b.text
    ]
    readme_examples.assert_shows(gemma_block.text, gemma_demo[1], real_model=True)


DEMO_SWEEPS = {"code_edit": 1, "repeat_list": 2, "open_prose": 3, "short_fact": 4}


def _verdict(orch_exe, workload, env) -> str:
    """The verdict `orch run` ends with (the same summary of the sweep), unwrapped."""
    res = run_orch(orch_exe, "summary", str(DEMO_SWEEPS[workload]), env=env)
    assert res.returncode == 0, res.stderr
    return "verdict: " + " ".join(res.stdout.rsplit("\nverdict: ", 1)[-1].split())


def _runs(env, sweep_id):
    return [
        {**r, "params": json.loads(r["params"] or "{}")}
        for r in db_rows(
            env,
            """
        SELECT r.sweep_id, r.arm, r.is_baseline, r.is_control, r.reference_arm, r.repeat_index, r.params,
               m.n_generated, m.n_drafted, m.loop_share, m.degenerate_loop, m.outputs_compared, m.outputs_differ
        FROM measured_runs r JOIN metrics m ON m.run_id = r.id WHERE r.sweep_id = ? ORDER BY r.id""",
            [sweep_id],
        )
    ]


def test_a_looping_story_is_flagged_and_never_a_win_while_a_literal_list_is_not(orch_exe, demo_env):
    story, listed = _verdict(orch_exe, "open_prose", demo_env), _verdict(orch_exe, "repeat_list", demo_env)
    by_sweep = {w: _runs(demo_env, DEMO_SWEEPS[w]) for w in ("open_prose", "repeat_list")}
    for runs in by_sweep.values():  # baseline, four n-gram arms, the control; three repeats each
        assert len([r for r in runs if "length_of" not in r["params"]]) == 6 * 3
    # the story loops for every program (its text is the same), the list continues the prompt's repetition
    assert all(r["degenerate_loop"] for r in by_sweep["open_prose"]), [
        (r["arm"], r["loop_share"]) for r in by_sweep["open_prose"]
    ]
    assert not any(r["degenerate_loop"] for r in by_sweep["repeat_list"])
    assert all(r["loop_share"] >= 0.9 for r in by_sweep["repeat_list"])
    assert story.startswith(f"verdict: sweep 3 (real_demo.j2 on open_prose, {COMMIT}-cpu): ")
    assert "beats" not in story and "loops" in story
    assert listed.startswith(f"verdict: sweep 2 (real_demo.j2 on repeat_list, {COMMIT}-cpu): ")
    assert "loops" not in listed


def test_parity_is_against_the_control_and_every_run_counts_its_tokens(orch_exe, demo_env):
    runs = _runs(demo_env, DEMO_SWEEPS["repeat_list"])
    control = next(r["arm"] for r in runs if r["is_control"])
    assert all(r["n_generated"] for r in runs)  # llama-completion's too (its eval runs + 1)
    assert {r["n_generated"] for r in runs if r["is_baseline"]} == {64}  # -n 64 in repeat_list.toml
    assert {r["n_generated"] for r in runs if r["arm"] == control} == {65}  # speculative-simple stops one later
    # The list drafts long accepted runs, so some arms decode past -n: their control runs again at their count.
    matched = [r for r in runs if "length_of" in r["params"]]
    assert matched and all(r["arm"] == f"control~{r['params']['length_of']}" and r["is_control"] for r in matched)
    by_slot = {(r["arm"], r["repeat_index"]): r for r in runs}
    for r in runs:
        if r["is_baseline"] or r["is_control"]:
            assert r["outputs_compared"] is None  # never compared: they are what the arms are compared with
        elif r["n_drafted"]:
            reference = by_slot[(r["reference_arm"], r["repeat_index"])]
            assert reference["n_generated"] == r["n_generated"], (r["arm"], r["n_generated"], reference["arm"])
            assert r["reference_arm"] in (control, f"control~{r['arm']}")
            assert (r["outputs_compared"], r["outputs_differ"]) == (1, 0)
    shown = json.loads(
        run_orch(orch_exe, "summary", str(DEMO_SWEEPS["repeat_list"]), "--format", "json", env=demo_env).stdout
    )
    assert not [row["arm"] for row in shown if "unequal_tokens" in (row["warnings"] or "")]
    assert all(row["speedup"] is None for row in shown if row.get("length_of"))  # a yardstick, not an arm
    for row in shown:  # a prediction from the other arms' verification cost, shown only where measurement agrees
        assert (row["modelled_speedup_unchecked"] is not None) == (row["drafted"] > 0), row["arm"]
        assert_prediction_checked(row)


def test_each_ngram_arm_is_predicted_before_the_sweep_from_one_run_of_its_own_setting(orch_exe, demo_env):
    """No draft model to replay: each n-gram setting's passes come from one -lv 5 run of it (a lookup probe, kept
    per setting and workload), priced at this machine's costs, and stored before the sweep's first run."""
    sweep = DEMO_SWEEPS["repeat_list"]
    made = db_rows(
        demo_env,
        "SELECT p.arm, p.predicted, p.low, p.high, p.missing, p.tokens_per_pass, p.made_at, "
        "a.method, a.argv FROM arm_predictions p JOIN acceptance_probes a "
        "ON a.id = p.acceptance_probe_id WHERE p.sweep_id = ?",
        [sweep],
    )
    assert {m["arm"] for m in made} == {"ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache"}
    first = db_rows(demo_env, "SELECT min(started_at) AS t FROM runs WHERE sweep_id = ?", [sweep])[0]["t"]
    for m in made:
        assert m["missing"] is None and 0 < m["low"] <= m["predicted"] <= m["high"] and m["made_at"] <= first
        assert m["method"] == m["arm"] and "-lv" in json.loads(m["argv"]) and m["tokens_per_pass"] >= 1
    shown = json.loads(run_orch(orch_exe, "summary", str(sweep), "--format", "json", env=demo_env).stdout)
    assert {r["arm"]: r["predicted"] for r in shown if r["arm"].startswith("ngram")} == {
        m["arm"]: m["predicted"] for m in made
    }


def test_the_first_differing_token_is_read_by_the_builds_own_tokenizer(real_build, gemma_dir):
    """Parity's token position comes from the run's build's llama-tokenize on the run's target (vocabulary only):
    two texts that part at one word part at one token, after the same tokens; text is read as it is (a
    leading '-' is no flag, a backslash no escape)."""
    bin_dir = Path(real_build.bin_dir)
    assert (bin_dir / tokens.TOOL).is_file()  # every build orch makes has it
    argv = [str(bin_dir / "llama-speculative-simple"), "-m", str(gemma_dir / GEMMA_FILE), "-p", "x"]
    tokenize = tokens.RunTokenizer()
    before, after = "def total(items):\n    return", "(items)\n"  # " sum" and " max": a word and its space
    summed, largest = tokenize(before + " sum" + after, argv), tokenize(before + " max" + after, argv)
    assert summed and largest and summed != largest
    at = output.first_difference(summed, largest)
    assert at == len(tokenize(before, argv))  # the shared start, token for token
    assert summed[:at] == largest[:at] and summed[at] != largest[at]
    assert tokenize(r"-n a\nb", argv) != tokenize("-n a\nb", argv)  # a backslash and n stay two characters
    assert tokens.RunTokenizer()("text", [str(bin_dir / "llama-speculative-simple"), "-m", "/nowhere.gguf"]) is None


def test_the_quantized_real_model_is_refused_as_a_source_unless_requantizing_is_asked(
    orch_exe, real_env, gemma_dir, tmp_path
):
    """Gemma's only file is Q4_K_M: quantizing it again is refused before anything runs (one line, exit 48, no
    file), and with --allow-requantize the copy says what it was made from."""
    source = str(gemma_dir / GEMMA_FILE)
    refused = run_orch(
        orch_exe, "models", "quantize", source, "--types", "q8_0", "--out", str(tmp_path / "q"), env=real_env
    )
    assert refused.returncode == 48 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "already quantized (Q4_K_M)" in refused.stderr and "--allow-requantize" in refused.stderr
    assert not (tmp_path / "q").exists()
    made = run_orch(
        orch_exe,
        "models",
        "quantize",
        source,
        "--types",
        "q8_0",
        "--allow-requantize",
        "--build",
        COMMIT,
        "--out",
        str(tmp_path / "q"),
        "--json",
        env=real_env,
    )
    assert made.returncode == 0, made.stderr
    (quant,) = json.loads(made.stdout)
    assert quant["label"] == "q8_0-from-q4_k_m" and quant["requantized_from"] == "Q4_K_M"
    assert "Q8_0" in quant["tensor_types"]
