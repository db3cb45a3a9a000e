"""Quantization labels, llama-bench output, the Pareto front, depth prompts and bench argv: recorded real output
(tests/fixtures/quality/README.md) and pure functions."""

from pathlib import Path

import gguf
import numpy as np
import pytest

from orchestrator.analyze.quality import estimated_bytes, pareto_front
from orchestrator.errors import QuantizedSource, QuantizeFailed, RecipeError
from orchestrator.models.quantize import (
    Quant,
    fallbacks_in,
    label_for,
    parse_types,
    quantize,
    refuse_quantized,
    source_type,
)
from orchestrator.parse.bench import bench_log, kind, label, parse_bench
from orchestrator.recipe import depth
from orchestrator.recipe.plan import Arm, Plan
from orchestrator.run.depth_fit import bench_context
from orchestrator.run.prepare import bench_argv
from orchestrator.run.quality_quants import name_by_files

FIX = Path(__file__).parent.parent / "fixtures" / "quality"


def test_fallbacks_are_read_from_llama_quantize_warnings():
    found = fallbacks_in((FIX / "0c1e57098" / "quantize-fallback.stderr").read_text())
    assert len(found) == 37
    assert found[0] == {"tensor": "token_embd.weight", "ncols": 128, "wanted": "Q4_K", "got": "Q5_0"}
    assert {(f["wanted"], f["got"]) for f in found} == {("Q4_K", "Q5_0"), ("Q6_K", "Q8_0")}
    assert fallbacks_in((FIX / "0c1e57098" / "quantize.stderr").read_text()) == []


def test_a_replaced_type_is_labelled_by_what_the_file_holds_never_by_the_request():
    fallbacks = [{"tensor": f"blk.{i}.attn_q.weight", "ncols": 128, "wanted": "Q2_K", "got": "Q4_0"} for i in range(25)]
    # Only the output matrix kept its own type (the largest tensor): the label follows the replaced tensors.
    assert label_for("q2_k", {"Q8_0": 4_000_000, "Q4_0": 3_000_000, "F32": 9000}, fallbacks) == (
        "Q4_0 (asked q2_k)",
        True,
    )
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
    assert bench_argv(["llama-bench", "-m", "x", "-o", "md", "--output=csv"]) == [
        "llama-bench",
        "-m",
        "x",
        "-o",
        "jsonl",
    ]
    assert bench_context(["llama-bench", "-p", "512", "-n", "128", "-d", "0,8192"]) == 512 + 128 + 8192


def test_pareto_front_keeps_only_points_nothing_beats_on_both():
    # (loss, speed): the third is slower and worse than the first; the last two tie on loss, one is faster.
    assert pareto_front([(0.0, 100), (0.1, 150), (0.05, 90), (0.3, 149), (0.3, 160)]) == [0, 1, 4]


def test_estimated_memory_adds_weights_and_kv_of_every_model():
    assert (
        estimated_bytes('{"models": [{"weight_bytes": 10, "kv_bytes": 5}, {"weight_bytes": 3, "kv_bytes": 1}]}') == 19
    )
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


def _gguf(path: Path, file_type, weight: np.ndarray, raw_dtype=None) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_file_type(file_type)
    writer.add_tensor("token_embd.weight", weight, raw_dtype=raw_dtype)
    writer.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_quantized_source_is_refused_in_one_line_naming_its_type_and_both_ways_out(tmp_path):
    f16 = _gguf(tmp_path / "m-f16.gguf", gguf.LlamaFileType.MOSTLY_F16, np.zeros((4, 32), dtype=np.float16))
    # A Q8_0 weight: 4 rows of one 34-byte block (32 weights) each, as llama-quantize writes it.
    q8 = _gguf(
        tmp_path / "m-q8.gguf",
        gguf.LlamaFileType.MOSTLY_Q8_0,
        np.zeros((4, 34), dtype=np.uint8),
        raw_dtype=gguf.GGMLQuantizationType.Q8_0,
    )
    assert source_type(f16) == ("F16", False) and source_type(q8) == ("Q8_0", True)
    assert refuse_quantized(f16, False, "pass --allow-requantize") is None
    with pytest.raises(QuantizedSource) as refused:
        refuse_quantized(q8, False, "pass --allow-requantize")
    line = str(refused.value)
    assert "\n" not in line and "m-q8.gguf is already quantized (Q8_0)" in line
    assert "F16 or BF16" in line and "--allow-requantize" in line and refused.value.exit_code == 48
    assert refuse_quantized(q8, True, "pass --allow-requantize") == "Q8_0"
    with pytest.raises(QuantizedSource):  # nothing made, nothing written: the refusal comes before llama-quantize
        quantize(q8, ["q4_0"], "/no/llama-quantize", "b", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_arm_carries_the_type_its_file_got_and_what_it_was_made_from():
    def quant(label, replaced=False, source=None):
        return Quant(
            requested="q2_k",
            label=label,
            path="p",
            sha256="s",
            size_bytes=1,
            source_sha256="x",
            build="b",
            replaced=replaced,
            requantized_from=source,
        )

    assert quant("q2_k").arm_value == "q2_k"
    assert quant("q2_k (3 tensors fell back, most to Q4_0)").arm_value == "q2_k"  # most weights got q2_k
    assert quant("Q4_0 (asked q2_k)", replaced=True).arm_value == "q4_0-asked-q2_k"
    assert quant("q2_k-from-q4_k_m", source="Q4_K_M").arm_value == "q2_k-from-q4_k_m"


def test_arms_and_their_references_are_renamed_by_what_their_files_hold():
    def arm(name, quant, reference=None):
        return Arm(name, {"quant": quant, "target": "t.gguf", "models": "/m"}, [], [], False, reference=reference)

    plan = Plan(
        "r.j2",
        "",
        "h",
        "quality",
        1,
        {},
        [
            arm("plain:quant=f16,context=short", "f16"),
            arm("plain:quant=q2_k,context=short", "q2_k"),
            arm("draft:quant=q2_k,context=short", "q2_k", reference="plain:quant=q2_k,context=short"),
            arm("plain:quant=q8_0,context=short", "q8_0"),
        ],
    )
    name_by_files(
        plan,
        {
            (Path("/m/t.gguf"), "q2_k"): "q4_0-asked-q2_k",
            (Path("/m/t.gguf"), "q8_0"): "q8_0",
            (Path("/m/t.gguf"), "f16"): "q4_k_m-as-f16",
        },
    )
    assert [a.name for a in plan.arms] == [
        "plain:quant=q4_k_m-as-f16,context=short",
        "plain:quant=q4_0-asked-q2_k,context=short",
        "draft:quant=q4_0-asked-q2_k,context=short",
        "plain:quant=q8_0,context=short",
    ]
    assert plan.arms[2].reference == "plain:quant=q4_0-asked-q2_k,context=short"
    assert plan.arms[1].params["quant"] == "q4_0-asked-q2_k" and plan.arms[1].params["quant_asked"] == "q2_k"
    assert "quant_asked" not in plan.arms[3].params


def test_a_point_is_dominated_only_where_the_intervals_say_so():
    # (loss, low, high, speed, low, high): q8_0 loses less; q4_k_m looks faster but their speeds overlap widely.
    q8 = (0.001, 0.0008, 0.0012, 60.0, 55.0, 66.0)
    q4 = (0.010, 0.008, 0.012, 58.0, 52.0, 64.0)
    assert pareto_front([(0.001, 60.0), (0.010, 58.0)]) == [0]  # by the means alone q4_k_m is beaten
    assert pareto_front([q8, q4]) == [0, 1]  # its speed is not told apart from q8_0's: it stays on the front
    slow = (0.010, 0.008, 0.012, 40.0, 38.0, 42.0)  # slower beyond both intervals, and worse: beaten
    assert pareto_front([q8, slow]) == [0]
    unknown = (0.010, None, None, 40.0, None, None)  # no intervals: its values, as before
    assert pareto_front([q8, unknown]) == [0]


def test_bench_output_nested_past_the_stack_is_a_parse_error():
    """A saved llama-bench file (`orch parse`) is data: 5,000 nested arrays were a RecursionError traceback."""
    from orchestrator.errors import ParseError
    from orchestrator.parse.bench import parse_bench

    for text in ("[" * 5000 + "]" * 5000, '{"a": ' * 5000 + "1" + "}" * 5000):
        with pytest.raises(ParseError, match="is not JSON"):
            parse_bench(text)
