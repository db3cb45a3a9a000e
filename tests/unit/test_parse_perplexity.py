"""llama-perplexity's output, parsed from recorded real runs (tests/fixtures/quality/README.md)."""

from pathlib import Path

import pytest

from orchestrator.parse.perplexity import parse_perplexity, problem

FIX = Path(__file__).parent.parent / "fixtures" / "quality"


def parsed(build: str, name: str) -> dict:
    return parse_perplexity(
        (FIX / build / f"{name}.stderr").read_text() + "\n" + (FIX / build / f"{name}.stdout").read_text()
    )


@pytest.mark.parametrize("build", ["0c1e57098", "f49e91787"])
def test_perplexity_final_estimate_chunks_and_context(build):
    p = parsed(build, "perplexity")
    assert (p["ppl"], p["ppl_err"]) == (121469.3521, 6081.69163)
    assert (p["n_chunks"], p["n_ctx"]) == (8, 256)
    assert len(p["chunk_ppl"]) == 8 and p["chunk_ppl"][-1] == p["ppl"]
    assert problem(p, kld=False) is None


def test_kl_divergence_every_block():
    p = parsed("0c1e57098", "kld-q4_k_m")
    assert (p["ppl"], p["ppl_err"]) == (120839.242130, 6057.845676)
    assert p["base_ppl"] == 121469.312524
    assert (p["ppl_ratio"], p["ppl_ratio_err"]) == (0.994813, 0.003785)
    assert p["ln_ppl_ratio"] == -0.005201 and p["ln_ppl_correlation"] == 99.71
    assert (p["kld_mean"], p["kld_mean_err"]) == (0.007127, 0.000022)
    assert (p["kld_max"], p["kld_p999"], p["kld_p99"], p["kld_median"], p["kld_p1"], p["kld_min"]) == (
        0.009415,
        0.009383,
        0.008954,
        0.007072,
        0.005843,
        0.005180,
    )
    assert (p["dp_max"], p["dp_min"], p["dp_rms"]) == (0.015, -0.010, 0.001)
    assert (p["same_top_p"], p["same_top_p_err"]) == (87.205, 1.048)
    assert (p["n_chunks"], p["n_ctx"], p["n_seq"]) == (8, 256, 4)
    assert len(p["chunks"]) == 8 and p["chunks"][0] == {
        "chunk": 1,
        "ppl": 129932.2811,
        "ln_ppl_ratio": 0.00793,
        "kld": 0.00722,
        "dp_rms": 0.000,
        "same_top_p": 92.126,
    }
    assert p["chunks"][-1]["ppl"] == pytest.approx(p["ppl"])  # the running estimate ends at the final one
    assert problem(p, kld=True) is None


def test_the_base_model_against_its_own_logits_agrees_fully():
    p = parsed("0c1e57098", "kld-self")
    assert p["kld_mean"] == 0 and p["same_top_p"] == 100.0 and p["ppl_ratio"] == 1.0


def test_older_build_prints_the_same_blocks():
    p = parsed("f49e91787", "kld-q2_k")
    assert p["kld_mean"] > 0.05 and 0 < p["same_top_p"] < 80 and p["ppl_ratio"] is not None


def test_text_too_short_exits_0_but_is_named():
    p = parsed("0c1e57098", "perplexity-text-too-short")
    assert "ppl" not in p
    assert problem(p, kld=False) == (
        "the evaluation text is 2272 tokens; llama-perplexity needs at least 4096 (2 x context 2048)"
    )


def test_a_perplexity_without_a_number_is_none_not_a_crash():
    p = parse_perplexity("Final estimate: PPL = inf +/- nan\nMean PPL(Q)-PPL(base)         : 1.0 ±        inf\n")
    assert p["ppl"] is None and p["ppl_diff_err"] is None
    assert problem(p, kld=False).startswith("no perplexity")
