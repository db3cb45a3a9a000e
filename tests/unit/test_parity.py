"""Output parity at temperature 0: the generated text read from real CLI logs, and parity stored per run and
shown in the summary (a difference, a warning; none, none)."""

import json
import re
from pathlib import Path

import pytest

from orchestrator import store
from orchestrator.analyze import summaries, verdict
from orchestrator.analyze.summaries import draw
from orchestrator.parse import output
from orchestrator.run.near_tie import TopTwo

LOGS = Path(__file__).parent.parent / "fixtures" / "logs" / "0c1e57098"
PROMPT = "The quick brown fox jumps over the lazy dog"
GREEDY = ["--temp", "0", "--top-k", "1", "-n", "128", "-p", PROMPT]
SPEC = ["/b/llama-speculative-simple", "-m", "t.gguf", "-md", "d.gguf", *GREEDY]
CONTROL = ["/b/llama-speculative-simple", "-m", "t.gguf", *GREEDY]  # the same program drafting nothing
COMPLETION = ["/b/llama-completion", "-m", "t.gguf", "-no-cnv", *GREEDY]
SERVER = ["/b/llama-server", "-m", "t.gguf", "--port", "8080"]
CTRL = "control:llama-speculative-simple"


def log(name: str) -> str:
    return (LOGS / f"{name}.stdout").read_text(errors="replace")


def test_the_generated_text_follows_the_prompt_in_both_tools_output_formats():
    spec, completion = (
        output.generated_text(log("spec-simple-draft"), SPEC),
        output.generated_text(log("completion"), COMPLETION),
    )
    assert PROMPT not in spec and not spec.startswith("<s>") and spec.startswith(" erre")  # the prompt is no output
    assert completion.startswith(" erre") and not completion.endswith("\n")
    # llama-speculative-simple ran past -n (it stops after the pass that reaches it): the texts still agree.
    assert len(spec) > len(completion) and output.first_difference(spec, completion) is None


def test_texts_of_another_target_differ_at_the_first_character_that_differs():
    draft = output.generated_text(log("spec-simple-draft"), SPEC)
    eagle3 = output.generated_text(log("spec-simple-eagle3"), SPEC)
    at = output.first_difference(eagle3, draft)
    assert at == 1 and eagle3[:at] == draft[:at] == " " and eagle3[at] != draft[at]
    assert output.first_difference(eagle3, output.generated_text(log("spec-simple-dflash"), SPEC)) is None


def test_no_text_where_it_cannot_be_read_safely():
    assert output.generated_text(log("cli-single-turn"), ["/b/llama-cli", *GREEDY]) is None  # chat template
    assert output.generated_text(log("completion"), [*COMPLETION[:-1], "not in the output"]) is None
    assert output.generated_text(log("completion"), ["/b/llama-completion", "-f", "prompt.txt"]) is None
    assert output.generated_text(log("completion"), ["/b/llama-bench", *GREEDY]) is None
    assert (
        output.generated_text(
            f"{PROMPT} hi\n\n[ Prompt: 1 t/s | Generation: 2 t/s ]\n", ["/b/llama-cli", "-no-cnv", *GREEDY]
        )
        == " hi"
    )


@pytest.mark.parametrize(
    "argv, greedy",
    [
        (["--temp", "0"], True),
        (["--temp=0.0"], True),
        (["--top-k", "1"], True),
        (["--temp", "0.8"], False),
        ([], False),  # llama.cpp's tools sample at 0.8 unless told
        (["--temp", "0", "--temp", "0.7"], False),  # the last one counts, as in llama.cpp's parser
        (["--temp", "x"], False),
    ],
)
def test_greedy_from_the_argv(argv, greedy):
    assert output.is_greedy(["/b/llama-completion", *argv]) is greedy


def test_first_difference_edges():
    assert output.first_difference("abc", "abd") == 2
    assert output.first_difference("abc", "abcdef") is None  # a prefix: agrees
    assert output.first_difference("", "abc") == 0 and output.first_difference("", "") is None


def test_first_difference_of_token_lists():
    assert output.first_difference([5, 6, 7], [5, 6, 8]) == 2
    assert output.first_difference([5, 6], [5, 6, 9]) is None  # a prefix: agrees
    assert output.first_difference([], [1]) == 0 and output.first_difference([], []) is None


def words(text: str, argv: list[str]) -> list[int]:
    """A tokenizer for the plumbing (the real one, llama-tokenize, is tested on the real model): a token per word
    or run of spaces, its id the word's sum of code points, and only for the programs these tests run."""
    assert argv[0].startswith("/b/llama-") and "t.gguf" in argv  # it is given the run's own build and target
    return [sum(map(ord, w)) for w in re.findall(r"\S+|\s+", text)]


def _sweep(tmp_path, arm_stdout: dict[str, str], *, greedy: bool = True, mode: str = "cli"):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(
        con,
        {
            "recipe_path": "recipes/x.j2",
            "recipe_hash": "h",
            "recipe_text": "t",
            "mode": mode,
            "repeat": 2,
            "build_name": "b",
            "status": "done",
        },
    )
    runs = {}
    for rep in range(2):
        for arm, stdout in arm_stdout.items():
            argv = SERVER if mode == "server" else COMPLETION if arm == "baseline" else CONTROL if arm == CTRL else SPEC
            argv = argv if greedy else [a for a in argv if a not in ("--temp", "0", "--top-k", "1")]
            reference = None if arm == "baseline" else "baseline" if arm == CTRL or CTRL not in arm_stdout else CTRL
            run = store.insert_run(
                con,
                {
                    "sweep_id": sweep,
                    "arm": arm,
                    "is_baseline": arm == "baseline",
                    "is_control": arm == CTRL,
                    "reference_arm": reference,
                    "params": {},
                    "repeat_index": rep,
                    "mode": mode,
                    "status": "ok",
                    "executed_argv": argv,
                },
            )
            drafted = 0 if arm in ("baseline", CTRL) else 10
            con.execute("INSERT INTO metrics (run_id, decode_tps, n_drafted) VALUES (?, ?, ?)", [run, 100.0, drafted])
            store.save_logs(con, run, {"stdout": stdout.encode()})
            runs[(arm, rep)] = run
    return con, sweep, runs


def test_cli_parity_is_stored_per_run_and_warned_in_the_summary(tmp_path):
    same, other = log("spec-simple-draft"), log("spec-simple-eagle3")
    con, sweep, runs = _sweep(tmp_path, {"baseline": log("completion"), "draft": same, "eagle3": other, CTRL: same})
    found = store.mark_output_differences(con, sweep)  # against the control; the control itself is not compared
    assert sorted(found) == [("draft", 0, 1), ("draft", 0, 1), ("eagle3", 1, 1), ("eagle3", 1, 1)]
    stored = con.execute(
        "SELECT outputs_compared, outputs_differ, first_diff_char FROM metrics WHERE run_id = ?", [runs[("eagle3", 1)]]
    ).fetchone()
    assert stored == (1, 1, 1)
    rows = {r["arm"]: r for r in summaries.rows(con, [sweep])}
    assert (rows["draft"]["outputs_differ"], rows["draft"]["outputs_compared"]) == (0, 2)
    assert rows["draft"]["warnings"] is None
    eagle3 = rows["eagle3"]
    assert (eagle3["outputs_differ"], eagle3["outputs_compared"], eagle3["first_diff_char"]) == (2, 2, 1)
    assert eagle3["warnings"] == "output_differs"
    assert eagle3["warning_messages"] == [
        "2 of 2 outputs differ at temperature 0 from the same program and target's without drafting (its control's, "
        "or the baseline's where it runs the same program) (the first at character 1 of the generated text): in exact "
        "arithmetic a greedy draft cannot change the target's text, but verifying a batch computes the target's "
        "logits in another order than decoding one token, and a near tie can flip: a finding about this build and "
        "backend, not noise; its speedup still compares the same number of tokens, not the same text after that "
        "token (orch show RUN prints a run's output)"
    ]
    text = draw.table_text(list(rows.values()), wide=True)
    assert "outputs_differ" in text and "2/2" in text and "0/2" in text


def test_the_first_difference_is_also_said_in_tokens_where_a_tokenizer_reads_both_texts(tmp_path):
    con, sweep, runs = _sweep(
        tmp_path, {"baseline": log("completion"), "eagle3": log("spec-simple-eagle3"), CTRL: log("spec-simple-draft")}
    )
    eagle3 = output.generated_text(log("spec-simple-eagle3"), SPEC)
    control = output.generated_text(log("spec-simple-draft"), CONTROL)
    expected = output.first_difference(words(eagle3, SPEC), words(control, CONTROL))
    assert expected is not None
    store.check_outputs(con, sweep, words)
    stored = con.execute(
        "SELECT first_diff_char, first_diff_token FROM metrics WHERE run_id = ?", [runs[("eagle3", 0)]]
    ).fetchone()
    assert stored == (1, expected)
    row = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "eagle3")
    assert row["first_diff_token"] == expected
    assert f"(the first at token {expected}, character 1 of the generated text)" in row["warning_messages"][0]
    # A re-parse has no tokenizer: it keeps what was found, and no run that agrees gets a position.
    store.check_outputs(con, sweep)
    assert con.execute("SELECT first_diff_token FROM metrics WHERE run_id = ?", [runs[("eagle3", 1)]]).fetchone() == (
        expected,
    )
    assert con.execute("SELECT count(first_diff_token) FROM metrics").fetchone() == (2,)


def test_no_comparison_unless_both_runs_sampled_greedily(tmp_path):
    con, sweep, _ = _sweep(
        tmp_path,
        {"baseline": log("completion"), "eagle3": log("spec-simple-eagle3"), CTRL: log("spec-simple-draft")},
        greedy=False,
    )
    assert store.mark_output_differences(con, sweep) == []
    row = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "eagle3")
    assert row["outputs_compared"] is None and row["warnings"] is None


def test_server_parity_locates_the_first_difference_from_the_stored_texts(tmp_path):
    con, sweep, runs = _sweep(tmp_path, {"baseline": "", "draft": ""}, mode="server")
    con.execute("UPDATE runs SET params = '{\"temperature\": 0}'")
    texts = {"baseline": ["same text", "the end"], "draft": ["same text", "the END and more"]}
    for (arm, _), run in runs.items():
        store.insert_requests(
            con,
            [
                {
                    "run_id": run,
                    "seq": i,
                    "prompt_id": f"p{i}",
                    "status": "ok",
                    "output_sha256": str(hash(t)),
                    "output_text": t,
                }
                for i, t in enumerate(texts[arm])
            ],
        )
    assert sorted(store.mark_output_differences(con, sweep, words)) == [("draft", 1, 2), ("draft", 1, 2)]
    row = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "draft")
    assert (row["outputs_differ"], row["outputs_compared"], row["first_diff_char"]) == (2, 4, 4)
    assert row["first_diff_token"] == 2  # "the", " ", then "end" against "END"


def test_a_resumed_slot_is_compared_once_with_the_control_run_that_counts(tmp_path):
    con, sweep, runs = _sweep(
        tmp_path, {"baseline": log("completion"), "eagle3": log("spec-simple-eagle3"), CTRL: log("spec-simple-draft")}
    )
    # A resume measured repeat 0 of the control again, now printing the eagle3 text: that run is the one counted.
    again = store.insert_run(
        con,
        {
            "sweep_id": sweep,
            "arm": CTRL,
            "is_baseline": False,
            "is_control": True,
            "reference_arm": "baseline",
            "params": {},
            "repeat_index": 0,
            "mode": "cli",
            "status": "ok",
            "executed_argv": CONTROL,
        },
    )
    store.save_logs(con, again, {"stdout": log("spec-simple-eagle3").encode()})
    assert sorted(store.mark_output_differences(con, sweep)) == [("eagle3", 0, 1), ("eagle3", 1, 1)]


def test_an_arm_of_another_target_is_compared_with_its_control_or_not_at_all(tmp_path):
    """An MTP arm runs its own target: the baseline's text is another model's. Its control (same target and
    program, drafting nothing) is what it must match; an arm of another target without one is not compared."""
    con, sweep, runs = _sweep(
        tmp_path,
        {
            "baseline": log("completion"),
            "mtp": log("spec-simple-eagle3"),
            "control:llama-speculative-simple": log("spec-simple-dflash"),
            "lone": log("spec-simple-eagle3"),
        },
    )
    con.execute("UPDATE runs SET target_sha256 = CASE WHEN arm = 'baseline' THEN 'plain' ELSE 'mtp' END")
    con.execute("UPDATE runs SET reference_arm = 'control:llama-speculative-simple' WHERE arm = 'mtp'")
    con.execute("UPDATE runs SET target_sha256 = 'other' WHERE arm = 'lone'")
    found = sorted(store.mark_output_differences(con, sweep))
    assert found == [("mtp", 0, 1), ("mtp", 0, 1)]  # the control, of another target than the baseline: neither


def test_another_programs_text_is_never_the_yardstick(tmp_path):
    """llama-completion's greedy text differs from llama-speculative-simple's by itself (on Gemma 3 270M from
    character 31-175): an arm whose only partner is such a baseline is not compared, rather than flagged; where
    the baseline runs the arm's own program it is the yardstick."""
    con, sweep, runs = _sweep(tmp_path, {"baseline": log("completion"), "eagle3": log("spec-simple-eagle3")})
    assert store.mark_output_differences(con, sweep) == []
    con.execute("UPDATE runs SET executed_argv = ? WHERE arm = 'baseline'", [json.dumps(CONTROL)])
    assert sorted(store.mark_output_differences(con, sweep)) == [("eagle3", 1, 1), ("eagle3", 1, 1)]


def test_a_run_that_drafted_nothing_and_a_control_are_never_compared(tmp_path):
    con, sweep, runs = _sweep(
        tmp_path, {"baseline": log("completion"), "ngram": log("spec-simple-eagle3"), CTRL: log("spec-simple-draft")}
    )
    con.execute("UPDATE metrics SET n_drafted = 0 WHERE run_id = ?", [runs[("ngram", 0)]])
    assert store.mark_output_differences(con, sweep) == [("ngram", 1, 1)]  # repeat 1, which drafted
    compared = con.execute(
        "SELECT r.arm, r.repeat_index FROM metrics m JOIN runs r ON r.id = m.run_id "
        "WHERE m.outputs_compared IS NOT NULL"
    ).fetchall()
    assert compared == [("ngram", 1)]


@pytest.mark.parametrize(
    "margin, top_two, said",
    [
        (0.154, True, ", a near tie (the target's top two 0.154 apart in log-probability)"),  # the pair's open prose
        (2.0, True, ""),  # the texts' tokens, but far apart: no cause named
        (0.01, False, ""),  # close, but not the two texts' tokens
        (None, None, ""),  # not asked (no server at hand): no cause named
    ],
)
def test_a_near_tie_is_named_only_where_the_targets_top_two_show_one(tmp_path, margin, top_two, said):
    con, sweep, runs = _sweep(
        tmp_path, {"baseline": log("completion"), "eagle3": log("spec-simple-eagle3"), CTRL: log("spec-simple-draft")}
    )
    eagle3 = words(output.generated_text(log("spec-simple-eagle3"), SPEC), SPEC)
    control = words(output.generated_text(log("spec-simple-draft"), CONTROL), CONTROL)
    at = output.first_difference(eagle3, control)
    asked = []

    def judge(argv, prefix, theirs, mine):
        asked.append((argv, prefix, theirs, mine))
        return None if margin is None else TopTwo(margin, top_two)

    store.check_outputs(con, sweep, words, judge)
    # asked with the control's argv (its prompt and target), its tokens up to the first difference and both tokens
    assert asked[0] == (CONTROL, control[:at], control[at], eagle3[at])
    row = next(r for r in summaries.rows(con, [sweep]) if r["arm"] == "eagle3")
    told = verdict.verdict([r for r in summaries.rows(con, [sweep])])
    assert f"Text differs from the control's: eagle3 from token {at}{said} (" in told
    assert f"eagle3's text differs from its control's from token {at}{said}." in verdict.gist(
        summaries.rows(con, [sweep])
    )
    assert (row["first_diff_margin"], row["first_diff_top_two"]) == (margin, top_two)
