"""Parsers over real logs of llama.cpp 0c1e57098 (Oct 2026: timestamped lines, `common_perf_print`, stats at -lv 4).

Every expected number below was read from the fixture files (tests/fixtures/logs/0c1e57098/, see its README).
"""

from pathlib import Path

import pytest

from orchestrator.parse import parse_text

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "0c1e57098"
HELP = Path(__file__).resolve().parent.parent / "fixtures" / "help" / "0c1e57098"


def log(name: str, stream: str = "stderr") -> str:
    if stream == "both":
        return log(name, "stdout") + log(name, "stderr")
    return (LOGS / f"{name}.{stream}").read_text()


def test_speculative_simple_lv4_end_block_stats_and_target_perf():
    p = parse_text(log("spec-simple-draft"))
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"]) == (16, 81, 69, 45)
    assert m["acceptance"] == pytest.approx(45 / 69)
    assert p.extra["accept_pct"] == 65.217 and p.warnings == []
    assert (m["encode_tps"], m["decode_tps"]) == (11.278, 6.316)
    assert (p.extra["encode_tokens"], p.extra["encode_s"], p.extra["decode_tokens"], p.extra["decode_s"]) == (
        12,
        1.064,
        81,
        12.824,
    )
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (850.88, 3826.97, 89)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (6554.01, 29, 15060.59)
    assert (p.extra["sampling_ms"], p.extra["samplers_ms"], p.extra["graphs_reused"]) == (2.98, 0.97, 28)
    assert (p.extra["prompt_eval_tps"], p.extra["eval_tps"], p.extra["unaccounted_ms"]) == (23.26, 4.42, 4676.63)
    assert m["mean_accept_len"] == 2.96
    # By position over the 6 drafts made: the line's rates are over 23 accept calls (0.261 x 23 = 6 drafts accepted
    # at position 0: every draft made had its first token accepted); 36 draft calls made 6 drafts (draft_min 5)
    assert m["accept_rate_per_pos"] == pytest.approx(
        [6 / 6, 6 / 6, 5 / 6, 4 / 6, 3 / 6, 3 / 6, 3 / 6, 2 / 6, 2 / 6, 2 / 6, 2 / 6, 2 / 6, 2 / 6, 1 / 6, 1 / 6, 1 / 6]
    )
    [st] = p.extra["draft_stats"]
    assert st["impl"] == "draft-simple"
    assert (st["calls_begin"], st["calls_gen"], st["calls_accept"]) == (1, 36, 23)
    assert (st["gen_drafts"], st["acc_drafts"], st["gen_tokens"], st["acc_tokens"]) == (6, 6, 69, 45)
    assert st["dur_ms"] == [0.000, 5020.411, 0.015]
    assert "draft" not in p.perf  # the draft: section holds only the statistics line here


def test_statistics_agree_with_end_block():
    p = parse_text(log("spec-simple-draft"))
    [st] = p.extra["draft_stats"]
    assert (st["gen_tokens"], st["acc_tokens"]) == (p.metrics["n_drafted"], p.metrics["n_accepted"])
    # mean acc len = 1 + acc_tokens / calls_accept, as printed with two decimals
    assert 1 + st["acc_tokens"] / st["calls_accept"] == pytest.approx(st["mean_accept_len"], abs=0.005)


def test_default_verbosity_hides_statistics_but_not_end_block():
    p = parse_text(log("spec-simple-draft-lv3"))
    m = p.metrics
    assert (m["n_drafted"], m["n_accepted"], m["n_predict"]) == (69, 45, 81)
    assert (m["encode_tps"], m["decode_tps"]) == (827.529, 198.344)
    assert (m["load_ms"], m["prompt_eval_tokens"], m["eval_runs"], m["total_ms"]) == (1136.75, 89, 29, 789.52)
    assert m["mean_accept_len"] is None and m["accept_rate_per_pos"] is None
    assert "draft_stats" not in p.extra


def test_stdout_and_stderr_concatenated_parse_the_same():
    assert parse_text(log("spec-simple-draft-lv3", "both")).metrics == parse_text(log("spec-simple-draft-lv3")).metrics
    assert parse_text(log("spec-simple-draft-lv3", "stdout")).metrics["n_drafted"] is None  # text only on stdout


def test_nothing_drafted_prints_minus_nan():
    p = parse_text(log("spec-simple-ngram-nodraft"))
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"]) == (None, 49, 0, 0)
    # the printed `n_draft = 3` is the draft model's window, nothing an n-gram method drafts by: kept apart
    assert p.extra["n_draft_printed"] == 3 and m["spec_type"] == "ngram-simple"
    assert m["acceptance"] is None and p.extra["accept_text"] == "-nan" and p.extra["accept_pct"] is None
    assert (m["encode_tps"], m["decode_tps"]) == (2232.143, 645.842)
    assert (m["prompt_eval_ms"], m["prompt_eval_tokens"], m["eval_ms"], m["eval_runs"]) == (6.40, 4, 67.95, 48)
    [st] = p.extra["draft_stats"]
    assert (st["impl"], st["calls_gen"], st["gen_tokens"], st["mean_accept_len"]) == ("ngram-simple", 49, 0, None)
    assert p.to_dict()["extra"]["accept_pct"] is None


def test_speculative_tree_draft_and_target_sections():
    p = parse_text(log("speculative-tree"))
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"]) == (16, 67, 160, 56)
    assert m["acceptance"] == 0.35 and p.extra["accept_pct"] == 35.0
    assert (m["encode_tps"], m["decode_tps"]) == (4.817, 2.267)
    draft, target = p.perf["draft"], p.perf["target"]
    assert draft.source == "llama_perf_context_print"  # library lines, visible only with -lv 4
    assert (draft.load_ms, draft.prompt_eval_tokens, draft.eval_ms, draft.eval_runs) == (455.59, 31, 21426.11, 150)
    assert (draft.total_ms, draft.total_tokens, draft.graphs_reused) == (32045.40, 181, 170)
    # Target: every verification is a multi-token batch, so eval shows one run and `inf` tokens per second.
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (1181.27, 2491.42, 182)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (0.0, 1, 32729.50)
    assert target.eval_tps is None


def test_completion_perf_block_gives_speeds():
    p = parse_text(log("completion"))
    m = p.metrics
    # decode: 63 runs over total - prompt eval (4935.56 - 1177.94 ms); the eval-only rate stays in extra.
    assert m["encode_tps"] == 10.19 and m["decode_tps"] == pytest.approx(63 / (4935.56 - 1177.94) * 1000)
    assert p.extra["eval_tps"] == 16.82
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (1237.51, 1177.94, 12)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (3745.90, 63, 4935.56)
    assert m["n_drafted"] is None and not p.has_end_block
    assert p.perf["target"].samplers_tokens == 76 and p.perf["target"].total_tokens == 75


def test_completion_lv4_same_block_plus_library_lines():
    p = parse_text(log("completion-lv4"))
    m = p.metrics
    assert (m["prompt_eval_ms"], m["eval_ms"], m["eval_runs"], m["load_ms"]) == (4.33, 45.86, 63, 262.45)
    # Sampling and unaccounted time are a quarter of this tiny run: 1007 tok/s of wall time, not 1374 of eval.
    assert m["encode_tps"] == 2774.57 and m["decode_tps"] == pytest.approx(63 / (66.91 - 4.33) * 1000)
    assert p.extra["eval_tps"] == 1373.87


def test_run_logs_carry_no_version_banner():
    # At this commit neither speculative-simple nor completion prints a build banner, even with -lv 4.
    for name in ("spec-simple-draft", "completion-lv4", "speculative-tree"):
        assert parse_text(log(name, "both")).version is None


@pytest.mark.parametrize(
    "tool", ["llama-speculative-simple", "llama-speculative", "llama-server", "llama-completion", "llama-cli"]
)
def test_version_text_of_each_binary(tool):
    v = parse_text((HELP / f"{tool}.version.txt").read_text()).version
    assert v == {
        "version": "0.5.0-dev",
        "build_number": 1,
        "commit": "0c1e570",
        "built_with": "GNU 12.2.0 for Linux x86_64",
    }
