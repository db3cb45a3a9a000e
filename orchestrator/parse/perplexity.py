"""llama-perplexity's output: perplexity, and KL divergence against a base model's saved logits.

Every block it prints (LLAMACPP.md section 14), from stdout and stderr together (the final estimate goes to the
log stream, the chunk values to stdout, and in some builds one line is split across both):

    perplexity: calculating perplexity over 8 chunks, n_ctx=256, batch_size=2048, n_seq=8
    [1]128904.7663,[2]114589.7614,...
    Final estimate: PPL = 121469.3521 +/- 6081.69163
    kl_divergence: computing over 8 chunks, n_ctx=256, batch_size=2048, n_seq=4
    chunk  PPL  ln(PPL(Q)/PPL(base))  KL Divergence  Δp RMS  Same top p      (one row per chunk, each ± err)
    ====== Perplexity statistics ======        Mean PPL(Q) : v ± e, Mean PPL(base), Cor(...), Mean ln(...), ...
    ====== KL divergence statistics ======     Mean KLD: v ± e, Maximum KLD, 99.9% KLD, ..., Minimum KLD
    ====== Token probability statistics ====== Mean Δp: v ± e %, percentiles, RMS Δp, Same top p: v ± e %
    perplexity: you need at least 4096 tokens to evaluate perplexity with a context of 2048   (exit status 0!)

Names follow the quality table: ppl, ppl_err, base_ppl, ppl_ratio, ln_ppl_ratio, kld_mean, kld_p99, dp_rms,
same_top_p (percent), each `_err` where llama.cpp prints one.
"""

from __future__ import annotations

import re

from .lines import to_float, to_int

NUM = r"(-?(?:\d+(?:\.\d*)?|\.\d+|nan|inf)(?:e[-+]?\d+)?)"
PM = rf"{NUM}\s*(?:±|\+/-)\s*{NUM}"
CHUNKS = re.compile(
    r"(?:calculating perplexity|computing) over (\d+) chunks, n_ctx=(\d+)(?:, batch_size=(\d+))?"
    r"(?:, n_seq=(\d+))?"
)
FINAL = re.compile(rf"Final estimate: PPL = {PM}")
CHUNK_VALUES = re.compile(rf"\[(\d+)\]{NUM},")
TOO_SHORT = re.compile(r"you need at least (\d+) tokens to evaluate perplexity with a context of (\d+)")
TOKENIZED = re.compile(r"tokenizes to only (\d+) tokens")
# "Mean PPL(Q)   : v ± e" -> (key, has error)
PPL_STATS = {
    "Mean PPL(Q)": "ppl",
    "Mean PPL(base)": "base_ppl",
    "Mean ln(PPL(Q)/PPL(base))": "ln_ppl_ratio",
    "Mean PPL(Q)/PPL(base)": "ppl_ratio",
    "Mean PPL(Q)-PPL(base)": "ppl_diff",
}
CORRELATION = re.compile(rf"Cor\(ln\(PPL\(Q\)\), ln\(PPL\(base\)\)\):\s*{NUM}%")
PERCENTILE_NAMES = {
    "Maximum": "max",
    "Minimum": "min",
    "Median": "median",
    "99.9%": "p999",
    "99.0%": "p99",
    "95.0%": "p95",
    "90.0%": "p90",
    "75.0%": "p75",
    "25.0%": "p25",
    "10.0%": "p10",
    "5.0%": "p5",
    "1.0%": "p1",
    "0.1%": "p01",
}
STAT_LINE = re.compile(rf"^\s*(Mean|Maximum|Minimum|Median|\d+\.\d%)\s+(KLD|Δp):\s*{NUM}(?:\s*±\s*{NUM})?\s*%?", re.M)
# The KL-divergence run's per-chunk table: chunk, PPL ± e, ln(PPL(Q)/PPL(base)) ± e, KLD ± e, Δp RMS ± e %, same top p ± e %
CHUNK_ROW = re.compile(rf"^\s*(\d+)\s+{PM}\s+{PM}\s+{PM}\s+{PM}\s*%\s+{PM}\s*%\s*$", re.M)
RMS_DP = re.compile(rf"RMS Δp\s*:\s*{PM}\s*%")
SAME_TOP = re.compile(rf"Same top p:\s*{PM}\s*%")


def parse_perplexity(text: str) -> dict:
    """Every figure found in llama-perplexity's output (stdout and stderr joined); missing ones are absent."""
    out: dict = {}
    if m := CHUNKS.search(text):
        out.update(n_chunks=to_int(m[1]), n_ctx=to_int(m[2]), n_batch=to_int(m[3]), n_seq=to_int(m[4]))
    if m := TOO_SHORT.search(text):
        out.update(tokens_needed=to_int(m[1]), n_ctx=to_int(m[2]))
        if t := TOKENIZED.search(text):
            out["tokens_in_text"] = to_int(t[1])
    if values := CHUNK_VALUES.findall(text):
        out["chunk_ppl"] = [to_float(v) for _, v in values]
    if rows := CHUNK_ROW.findall(text):
        out["chunks"] = [
            {
                "chunk": int(r[0]),
                "ppl": to_float(r[1]),
                "ln_ppl_ratio": to_float(r[3]),
                "kld": to_float(r[5]),
                "dp_rms": to_float(r[7]),
                "same_top_p": to_float(r[9]),
            }
            for r in rows
        ]
    if m := FINAL.search(text):
        out.update(ppl=to_float(m[1]), ppl_err=to_float(m[2]))
    for label, key in PPL_STATS.items():
        if m := re.search(rf"^{re.escape(label)}\s*:\s*{PM}", text, re.M):
            out[key], out[f"{key}_err"] = to_float(m[1]), to_float(m[2])
    if m := CORRELATION.search(text):
        out["ln_ppl_correlation"] = to_float(m[1])
    for m in STAT_LINE.finditer(text):
        prefix = "kld" if m[2] == "KLD" else "dp"
        name = "mean" if m[1] == "Mean" else PERCENTILE_NAMES.get(m[1])
        if name:
            out[f"{prefix}_{name}"] = to_float(m[3])
            if m[1] == "Mean" and m[4] is not None:
                out[f"{prefix}_mean_err"] = to_float(m[4])
    if m := RMS_DP.search(text):
        out.update(dp_rms=to_float(m[1]), dp_rms_err=to_float(m[2]))
    if m := SAME_TOP.search(text):
        out.update(same_top_p=to_float(m[1]), same_top_p_err=to_float(m[2]))
    return out


def problem(parsed: dict, *, kld: bool) -> str | None:
    """Why this output holds no usable result (the run exits 0 in some of these cases), or None."""
    if "tokens_needed" in parsed:
        have = parsed.get("tokens_in_text")
        return (
            f"the evaluation text is {have if have is not None else 'too few'} tokens; llama-perplexity needs "
            f"at least {parsed['tokens_needed']} (2 x context {parsed['n_ctx']})"
        )
    if parsed.get("ppl") is None:
        return "no perplexity in the output (neither `Final estimate` nor `Mean PPL(Q)`)"
    if kld and parsed.get("kld_mean") is None:
        return "no KL divergence statistics in the output"
    return None
