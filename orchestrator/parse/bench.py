"""llama-bench's machine output (`-o jsonl`, one JSON object per test; `-o json`, an array of them).

A test is prompt processing (n_prompt > 0, n_gen 0: "pp"), generation (n_gen > 0, n_prompt 0: "tg") or both
("pg"), at a depth n_depth of context already filled. Its avg_ts is tokens per second over its repetitions, and
samples_ts each repetition's. As a run's metrics: a tg test's avg_ts is decode_tps, a pp test's encode_tps; a pg
test's is neither (tokens of both kinds over their joint time), so it stays in extra only.
"""

from __future__ import annotations

import json

from orchestrator.errors import ParseError

from . import METRIC_KEYS, ParsedLog
from .lines import to_float

# What tells one test from another, as llama.cpp's compare-llama-bench.py keys them (LLAMA_BENCH_KEY_PROPERTIES).
TEST_KEYS = (
    "n_prompt",
    "n_gen",
    "n_depth",
    "n_batch",
    "n_ubatch",
    "type_k",
    "type_v",
    "n_threads",
    "n_gpu_layers",
    "flash_attn",
    "model_type",
    "model_size",
)


def parse_bench(stdout: str) -> list[dict]:
    """The tests llama-bench printed; ParseError when a line is not JSON."""
    text = stdout.strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            return list(json.loads(text))
        except (ValueError, RecursionError) as exc:  # RecursionError: a saved file nested past Python's stack
            raise ParseError(f"llama-bench -o json output is not JSON: {exc}") from None
    tests = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                tests.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                raise ParseError(f"llama-bench -o jsonl line {number} is not JSON: {exc}") from None
    return tests


def kind(test: dict) -> str:
    n_prompt, n_gen = test.get("n_prompt") or 0, test.get("n_gen") or 0
    return "pg" if n_prompt and n_gen else "pp" if n_prompt else "tg"


def label(test: dict) -> str:
    """pp512, tg128, pp512+tg128, with @ d4096 where the test ran at a depth (llama-bench's own names)."""
    k = kind(test)
    name = {
        "pp": f"pp{test.get('n_prompt')}",
        "tg": f"tg{test.get('n_gen')}",
        "pg": f"pp{test.get('n_prompt')}+tg{test.get('n_gen')}",
    }[k]
    return name + (f" @ d{test['n_depth']}" if test.get("n_depth") else "")


def bench_log(test: dict) -> ParsedLog:
    """One test as a run's metrics (see the module's note on pg tests)."""
    metrics = dict.fromkeys(METRIC_KEYS)
    tps = to_float(str(test.get("avg_ts")))
    k = kind(test)
    if k == "tg":
        metrics.update(decode_tps=tps, n_predict=test.get("n_gen"), n_generated=test.get("n_gen"))
    elif k == "pp":
        metrics.update(encode_tps=tps, prompt_eval_tokens=test.get("n_prompt"))
    extra = {
        "bench_test": label(test),
        "bench_kind": k,
        "bench_tps": tps,
        "bench_samples_ts": test.get("samples_ts"),
        "bench_stddev_ts": test.get("stddev_ts"),
        **{f"bench_{key}": test.get(key) for key in TEST_KEYS},
    }
    version = {"commit": test.get("build_commit"), "build_number": test.get("build_number")}
    return ParsedLog(metrics=metrics, extra=extra, version=version, has_end_block=True)
