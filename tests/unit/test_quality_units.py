"""Quantization labels, llama-bench output, the Pareto front, depth prompts and bench argv: recorded real output
(tests/fixtures/quality/README.md) and pure functions."""

from pathlib import Path

import pytest

from orchestrator.analyze.quality import estimated_bytes, pareto_front
from orchestrator.errors import QuantizeFailed, RecipeError
from orchestrator.models.quantize import fallbacks_in, label_for, parse_types
from orchestrator.parse.bench import bench_log, kind, label, parse_bench
from orchestrator.recipe import depth
from orchestrator.run.depth_fit import bench_context
from orchestrator.run.prepare import bench_argv

FIX = Path(__file__).parent.parent / "fixtures" / "quality"


def test_fallbacks_are_read_from_llama_quantize_warnings():
    found = fallbacks_in((FIX / "0c1e57098" / "quantize-fallback.stderr").read_text())
    assert len(found) == 37
    assert found[0] == {"tensor": "token_embd.weight", "ncols": 128, "wanted": "Q4_K", "got": "Q5_0"}
    assert {(f["wanted"], f["got"]) for f in found} == {("Q4_K", "Q5_0"), ("Q6_K", "Q8_0")}
    assert fallbacks_in((FIX / "0c1e57098" / "quantize.stderr").read_text()) == []


def test_a_replaced_type_is_labelled_by_what_the_file_holds_never_by_the_request():
    fallbacks = [{"tensor": f"blk.{i}.attn_q.weight", "ncols": 128, "wanted": "Q2_K", "got": "Q4_0"}
                 for i in range(25)]
    # Only the output matrix kept its own type (the largest tensor): the label follows the replaced tensors.
    assert label_for("q2_k", {"Q8_0": 4_000_000, "Q4_0": 3_000_000, "F32": 9000}, fallbacks) == \
        ("Q4_0 (asked q2_k)", True)
    assert label_for("q4_k_m", {"Q4_K": 5_000_000, "Q6_K": 7_000_000}) == ("q4_k_m", False)
    some = [{"tensor": "t", "ncols": 128, "wanted": "Q4_K", "got": "Q5_0"}] * 3
    assert label_for("q4_k_m", {"Q4_K": 1, "Q5_0": 2}, some) == ("q4_k_m (3 tensors fell back, most to Q5_0)", False)


def test_unknown_quant_types_are_refused_before_anything_runs():
    assert parse_types("Q4_K_M, q8_0,q4_k_m") == ["q4_k_m", "q8_0"]
    with pytest.raises(QuantizeFailed, match="q9_z is not a type"):
        parse_types("q4_k_m,q9_z")


@pytest.mark.parametrize("build", ["0c1e57098", "f49e91787"])
def test_llama_bench_jsonl_tests_and_their_metrics(build):
    tests = parse_bench((FIX / build / "bench.stdout").read_text())
    assert [label(t) for t in tests] == ["pp64", "tg16", "pp64 @ d256", "tg16 @ d256"]
    pp, tg = bench_log(tests[2]), bench_log(tests[3])
    assert pp.metrics["encode_tps"] == tests[2]["avg_ts"] and pp.metrics["decode_tps"] is None
    assert tg.metrics["decode_tps"] == tests[3]["avg_ts"] and tg.metrics["encode_tps"] is None
    assert tg.extra["bench_n_depth"] == 256 and len(tg.extra["bench_samples_ts"]) == 2
    assert tg.version["commit"] == build[:7]


def test_a_prompt_and_generation_test_is_neither_prefill_nor_decode():
    test = {"n_prompt": 512, "n_gen": 128, "n_depth": 0, "avg_ts": 100.0}
    assert kind(test) == "pg" and label(test) == "pp512+tg128"
    m = bench_log(test).metrics
    assert m["decode_tps"] is None and m["encode_tps"] is None


def test_bench_argv_asks_for_jsonl_whatever_the_recipe_said():
    assert bench_argv(["llama-bench", "-m", "x", "-o", "md", "--output=csv"]) == ["llama-bench", "-m", "x", "-o",
                                                                                    "jsonl"]
    assert bench_context(["llama-bench", "-p", "512", "-n", "128", "-d", "0,8192"]) == 512 + 128 + 8192


def test_pareto_front_keeps_only_points_nothing_beats_on_both():
    # (loss, speed): the third is slower and worse than the first; the last two tie on loss, one is faster.
    assert pareto_front([(0.0, 100), (0.1, 150), (0.05, 90), (0.3, 149), (0.3, 160)]) == [0, 1, 4]


def test_estimated_memory_adds_weights_and_kv_of_every_model():
    assert estimated_bytes('{"models": [{"weight_bytes": 10, "kv_bytes": 5}, {"weight_bytes": 3, "kv_bytes": 1}]}') \
        == 19
    assert estimated_bytes(None) is None


def test_depth_prompt_is_about_n_tokens_of_the_evaluation_text():
    path = Path(depth.prompt_file(4544))  # two texts' worth
    text = path.read_text()
    assert text.startswith("IN CONGRESS") and abs(len(text) - 2 * len(depth.TEXT.read_text())) <= 1
    assert depth.prompt_file(4544) == str(path)  # written once
    with pytest.raises(RecipeError):
        depth.prompt_file(0)


@pytest.mark.parametrize("commit", ["0c1e57098", "f49e91787"])
def test_llama_bench_help_is_read_although_its_options_are_indented(commit):
    from orchestrator.recipe.dialect import parse_help

    info = parse_help((FIX.parent / "help" / commit / "llama-bench.help.txt").read_text())
    assert {"-m", "--model", "-p", "-n", "-d", "-ctk", "-ctv", "-o", "-r"} <= info.accepted
