"""Parsers over real logs of llama.cpp f49e917 (early 2026: `--draft-max`, no timestamps by default, no statistics
line in speculative-simple, the draft context's perf printed after the target's).

Every expected number below was read from the fixture files (tests/fixtures/logs/f49e91787/, see its README).
"""

from pathlib import Path

import pytest

from orchestrator.parse import parse_text

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "f49e91787"
HELP = Path(__file__).resolve().parent.parent / "fixtures" / "help" / "f49e91787"


def log(name: str, stream: str = "stderr") -> str:
    if stream == "both":
        return log(name, "stdout") + log(name, "stderr")
    return (LOGS / f"{name}.{stream}").read_text()


def test_speculative_simple_end_block_and_target_perf():
    p = parse_text(log("spec-simple-draft"))
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"]) == (16, 67, 68, 40)
    assert m["acceptance"] == pytest.approx(40 / 68) and p.extra["accept_pct"] == 58.824 and p.warnings == []
    assert (m["encode_tps"], m["decode_tps"]) == (14.279, 5.338)
    assert (p.extra["encode_tokens"], p.extra["encode_s"], p.extra["decode_tokens"], p.extra["decode_s"]) == (
        12,
        0.840,
        67,
        12.551,
    )
    # Target numbers come from common_perf_print, not from the llama_perf_context_print block printed after it.
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (424.79, 2210.71, 87)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (3597.59, 19, 13477.46)
    assert (p.extra["sampling_ms"], p.extra["samplers_ms"], p.extra["graphs_reused"]) == (3.54, 1.54, 16)
    assert m["mean_accept_len"] is None and m["accept_rate_per_pos"] is None  # no statistics line in this era
    assert "draft_stats" not in p.extra


def test_draft_perf_printed_after_target_is_the_drafts():
    draft = parse_text(log("spec-simple-draft")).perf["draft"]
    assert draft.source == "llama_perf_context_print"
    assert (draft.load_ms, draft.prompt_eval_ms, draft.prompt_eval_tokens) == (1370.07, 972.19, 14)
    assert (draft.eval_ms, draft.eval_runs, draft.total_ms, draft.total_tokens, draft.graphs_reused) == (
        6161.55,
        86,
        13477.55,
        100,
        86,
    )


def test_log_prefix_and_timestamps_flags_parse_the_same_way():
    p = parse_text(log("spec-simple-draft-logprefix"))
    m = p.metrics
    assert (m["n_predict"], m["n_drafted"], m["n_accepted"]) == (67, 68, 40)
    assert (m["encode_tps"], m["decode_tps"]) == (2048.481, 501.366)
    assert (m["load_ms"], m["prompt_eval_ms"], m["eval_ms"], m["eval_runs"], m["total_ms"]) == (
        45.35,
        30.03,
        19.83,
        19,
        191.54,
    )
    assert p.perf["draft"].eval_runs == 86 and p.perf["draft"].load_ms == 59.06


def test_speculative_tree():
    p = parse_text(log("speculative-tree"))
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"], m["acceptance"]) == (
        16,
        67,
        160,
        56,
        0.35,
    )
    assert (m["encode_tps"], m["decode_tps"]) == (3176.284, 1.432)
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"], m["eval_runs"], m["total_ms"]) == (
        83.11,
        4.14,
        182,
        1,
        46922.08,
    )
    draft = p.perf["draft"]  # here inside the draft: section, as in every era of llama-speculative
    assert (draft.load_ms, draft.prompt_eval_tokens, draft.eval_ms, draft.eval_runs) == (44.21, 31, 33403.46, 150)


def test_translated_vocab_run_drafts_nothing():
    p = parse_text(log("vocab-mismatch-translated"))
    m = p.metrics
    assert (m["n_predict"], m["n_drafted"], m["n_accepted"], m["acceptance"]) == (65, 0, 0, None)
    assert p.extra["accept_text"] == "-nan"
    assert (m["encode_tps"], m["decode_tps"]) == (2732.240, 363.525)
    assert p.perf["draft"].prompt_eval_tokens == 170


def test_completion():
    p = parse_text(log("completion", "both"))
    m = p.metrics
    assert m["encode_tps"] == 13.85 and m["decode_tps"] == pytest.approx(63 / (18255.43 - 866.21) * 1000)
    assert p.extra["eval_tps"] == 3.63
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (882.00, 866.21, 12)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (17372.16, 63, 18255.43)
    assert not p.has_end_block and m["n_drafted"] is None


@pytest.mark.parametrize("commit,prompt_tps,gen_tps", [("f49e91787", 5673.6, 447.2), ("0c1e57098", 8353.0, 705.6)])
def test_chat_cli_speed_line_and_build_banner(commit, prompt_tps, gen_tps):
    text = (LOGS.parent / commit / "cli-single-turn.stdout").read_text()
    p = parse_text(text)
    assert (p.extra["cli_prompt_tps"], p.extra["cli_generation_tps"]) == (prompt_tps, gen_tps)
    assert (p.metrics["encode_tps"], p.metrics["decode_tps"]) == (prompt_tps, gen_tps)
    assert p.version == {"version": None, "build_number": 1, "commit": commit[:7], "built_with": None}


def test_run_logs_carry_no_version_banner():
    # `build: N (C) with ...` is LOG_DBG in common_init(), before -lv is parsed: never shown.
    for name in ("spec-simple-draft", "completion", "speculative-tree"):
        assert parse_text(log(name, "both")).version is None


@pytest.mark.parametrize(
    "tool", ["llama-speculative-simple", "llama-speculative", "llama-server", "llama-completion", "llama-cli"]
)
def test_version_text_of_each_binary(tool):
    v = parse_text((HELP / f"{tool}.version.txt").read_text()).version
    assert v == {"version": None, "build_number": 1, "commit": "f49e917", "built_with": "GNU 12.2.0 for Linux x86_64"}
