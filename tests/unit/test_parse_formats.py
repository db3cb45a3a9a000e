"""Parsers over small inline snippets, for the eras and forms no recorded fixture covers.

Snippets follow the format strings quoted in LLAMACPP.md (sections 1 to 3 and 6); the numbers are made up.
"""

import json
import math

import pytest

from orchestrator.parse import METRIC_KEYS, parse_text
from orchestrator.parse.lines import clean_lines, strip_prefixes, to_float
from orchestrator.parse.spec import parse_stats_line

# llama-speculative, 2023 (LOG_TEE + llama_print_timings, no `/ N tokens` on total time yet).
SPEC_2023 = """\
encoded   18 tokens in    0.412 seconds, speed:   43.689 t/s
decoded  130 tokens in   21.003 seconds, speed:    6.190 t/s

n_draft   = 8
n_predict = 130
n_drafted = 136
n_accept  = 51
accept    = 37.500%

draft:

llama_print_timings:        load time =   1800.12 ms
llama_print_timings:      sample time =      0.00 ms /     1 runs   (    0.00 ms per token,      inf tokens per second)
llama_print_timings: prompt eval time =    301.50 ms /    18 tokens (   16.75 ms per token,    59.70 tokens per second)
llama_print_timings:        eval time =   9000.40 ms /   220 runs   (   40.91 ms per token,    24.44 tokens per second)
llama_print_timings:       total time =  23001.00 ms

target:

llama_print_timings:        load time =  20400.00 ms
llama_print_timings:      sample time =    250.75 ms /   130 runs   (    1.93 ms per token,   518.45 tokens per second)
llama_print_timings: prompt eval time =  11000.25 ms /   152 tokens (   72.37 ms per token,    13.82 tokens per second)
llama_print_timings:        eval time =   2900.80 ms /    81 runs   (   35.81 ms per token,    27.92 tokens per second)
llama_print_timings:       total time =  23420.55 ms
"""

# llama-speculative-simple, 2024-11 -> 2025-11: library llama_perf_* lines, draft context then target.
SPEC_2024 = """\
encoded   14 tokens in    0.054 seconds, speed:  258.250 t/s
decoded  673 tokens in   12.132 seconds, speed:   55.473 t/s

n_draft   = 16
n_predict = 673
n_drafted = 600
n_accept  = 432
accept    = 72.000%

draft:

llama_perf_context_print:        load time =     310.11 ms
llama_perf_context_print: prompt eval time =    2000.00 ms /   700 tokens (    2.86 ms per token,   350.00 tokens per second)
llama_perf_context_print:        eval time =    4100.00 ms /   560 runs   (    7.32 ms per token,   136.59 tokens per second)
llama_perf_context_print:       total time =   12500.00 ms /  1260 tokens

target:

llama_perf_sampler_print:    sampling time =      45.60 ms /   673 runs   (    0.07 ms per token, 14758.77 tokens per second)
llama_perf_context_print:        load time =    2222.22 ms
llama_perf_context_print: prompt eval time =    7000.50 ms /   614 tokens (   11.40 ms per token,    87.71 tokens per second)
llama_perf_context_print:        eval time =    3100.25 ms /   120 runs   (   25.84 ms per token,    38.71 tokens per second)
llama_perf_context_print:       total time =   12700.00 ms /   734 tokens
"""


def test_2023_llama_print_timings_sections():
    p = parse_text(SPEC_2023)
    m = p.metrics
    assert (m["n_draft_max"], m["n_predict"], m["n_drafted"], m["n_accepted"]) == (8, 130, 136, 51)
    assert m["acceptance"] == pytest.approx(51 / 136)
    assert (m["encode_tps"], m["decode_tps"]) == (43.689, 6.190)
    # Target values, not the draft context's.
    assert (m["load_ms"], m["prompt_eval_ms"], m["prompt_eval_tokens"]) == (20400.00, 11000.25, 152)
    assert (m["eval_ms"], m["eval_runs"], m["total_ms"]) == (2900.80, 81, 23420.55)
    assert p.perf["draft"].load_ms == 1800.12 and p.perf["draft"].eval_runs == 220
    assert p.perf["draft"].sampling_ms == 0.0 and p.perf["target"].sampling_runs == 130
    assert p.perf["target"].total_tokens is None  # no `/ N tokens` before 2024
    assert p.perf["target"].source == "llama_print_timings"
    assert p.warnings == []


def test_2024_llama_perf_sampler_and_context_make_one_target_block():
    p = parse_text(SPEC_2024)
    target = p.perf["target"]
    assert target.source == "llama_perf_sampler_print"
    assert (target.sampling_ms, target.sampling_runs, target.load_ms, target.total_tokens) == (45.60, 673, 2222.22, 734)
    assert p.metrics["eval_runs"] == 120 and p.metrics["load_ms"] == 2222.22
    assert p.perf["draft"].prompt_eval_tokens == 700
    assert p.metrics["acceptance"] == pytest.approx(0.72)


def test_perf_fallback_speeds_without_end_block():
    # A plain completion run: speeds come from the perf block.
    text = SPEC_2024.split("target:\n", 1)[1]
    p = parse_text(text)
    m = p.metrics
    assert m["encode_tps"] == 87.71 and m["decode_tps"] == pytest.approx(120 / (12700.0 - 7000.5) * 1000)
    assert p.extra["eval_tps"] == 38.71
    assert m["n_drafted"] is None and m["acceptance"] is None


@pytest.mark.parametrize("token", ["nan", "-nan", "inf", "-inf"])
def test_accept_nan_forms(token):
    text = f"n_draft   = 16\nn_predict = 65\nn_drafted = 0\nn_accept  = 0\naccept    = {token}%\n"
    p = parse_text(text)
    assert p.metrics["acceptance"] is None
    assert p.extra["accept_pct"] is None and p.extra["accept_text"] == token
    assert p.metrics["n_drafted"] == 0
    json.dumps(p.to_dict())  # no NaN leaks into JSON


def test_accept_cross_check_warns_on_disagreement():
    text = "n_drafted = 10\nn_accept  = 5\naccept    = 70.000%\n"
    assert parse_text(text).warnings and parse_text(text).metrics["acceptance"] == 0.5


def test_old_single_calls_statistics_line():
    st = parse_stats_line(
        "statistics ngram_mod: #calls = 810, #gen drafts = 15, #acc drafts = 15, "
        "#gen tokens = 960, #acc tokens = 730, dur(b,g,a) = 0.149, 0.347, 0.005 ms"
    )
    assert st.impl == "ngram_mod" and st.calls == 810 and st.calls_accept is None
    assert (st.gen_drafts, st.acc_drafts, st.gen_tokens, st.acc_tokens) == (15, 15, 960, 730)
    assert st.dur_ms == [0.149, 0.347, 0.005] and st.mean_accept_len is None


def test_old_statistics_line_without_durations_and_unpadded_calls():
    st = parse_stats_line(
        "statistics draft: #calls = 10, #gen drafts = 10, #acc drafts = 10, #gen tokens = 110, #acc tokens = 98"
    )
    assert (st.impl, st.calls, st.gen_tokens, st.acc_tokens, st.dur_ms) == ("draft", 10, 110, 98, None)
    st = parse_stats_line(
        "statistics ngram_map_k: #calls(b,g,a) = 6 1690 26, #gen drafts = 26, #acc drafts = 26, "
        "#gen tokens = 1248, #acc tokens = 968, dur(b,g,a) = 2.234, 1.427, 0.016 ms"
    )
    assert (st.calls_begin, st.calls_gen, st.calls_accept, st.acc_tokens) == (6, 1690, 26, 968)


def test_primary_implementation_gives_mean_len_and_rates():
    text = (
        "0.01.000.000 I spec common_specu: statistics     ngram-mod: #calls(b,g,a) =    1     40      0, "
        "#gen drafts =      0, #acc drafts =     0, #gen tokens =      0, #acc tokens =     0, dur(b,g,a) = 0.1, 0.2, 0.0 ms\n"
        "0.01.000.001 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     30     20, "
        "#gen drafts =     10, #acc drafts =     9, #gen tokens =     20, #acc tokens =    14, #mean acc len = 1.70, "
        "#acc rate/pos = (0.450, 0.250), dur(b,g,a) = 0.001, 10.0, 0.01 ms\n"
    )
    p = parse_text(text)
    assert p.metrics["mean_accept_len"] == 1.7  # per accept call, as llama.cpp defines it
    # by position over the 10 drafts made (the line's rates are over 20 accept calls): 9 and 5 of them
    assert p.metrics["accept_rate_per_pos"] == pytest.approx([0.9, 0.5])
    assert [s["impl"] for s in p.extra["draft_stats"]] == ["ngram-mod", "draft-simple"]


def test_server_acceptance_lines_both_wordings():
    text = (
        "slot print_timing: id  0 | task 0 | \ndraft acceptance rate = 0.57576 (  171 accepted /   297 generated)\n"
        "0.06.896.015 I slot print_timing: id  1 | task 4 | draft acceptance = 0.64479 (  167 accepted /   259 "
        "generated), mean len =  2.92\n"
    )
    acc = parse_text(text).extra["server_acceptance"]
    assert [(a["accepted"], a["generated"], a["mean_len"]) for a in acc] == [(171, 297, None), (167, 259, 2.92)]


def test_prefix_stripping():
    assert strip_prefixes("0.06.895.980 I slot print_timing: id  1 | task 0 | prompt eval time = 1 ms") == (
        "prompt eval time = 1 ms",
        "I",
    )
    assert strip_prefixes("0.00.924.086 E spec common_specu: the target and draft vocabs are not compatible") == (
        "the target and draft vocabs are not compatible",
        "E",
    )
    assert strip_prefixes("0.00.238.502 I cmn          init: llama threadpool init") == ("llama threadpool init", "I")
    assert strip_prefixes("12.03.001.002 W srv  load_model: x") == ("x", "W")
    assert strip_prefixes("llama_perf_context_print:        load time =     1.00 ms") == (
        "llama_perf_context_print:        load time =     1.00 ms",
        None,
    )
    assert strip_prefixes("0.06.201.013 I ") == ("", "I")
    # `--log-prefix` without timestamps (early 2026), `--no-log-timestamps` (late 2026): level letter only.
    assert strip_prefixes("I common_perf_print:    sampling time =       0.39 ms") == (
        "common_perf_print:    sampling time =       0.39 ms",
        "I",
    )


def test_jsonl_lines_are_unwrapped():
    text = '{"type":"log","time":1,"level":"info","msg":"n_drafted = 7\\n"}\n{"type":"log","time":2,"level":"info","msg":"n_accept  = 7\\n"}\n'
    lines = clean_lines(text)
    assert [(x.text, x.level) for x in lines] == [("n_drafted = 7", "I"), ("n_accept  = 7", "I")]
    assert parse_text(text).metrics["acceptance"] == 1.0


def test_to_float_rejects_non_measurements():
    assert to_float("inf") is None and to_float("-nan") is None and to_float("12.5") == 12.5


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "version: 0.5.0-dev (build 1, commit 0c1e570)\nbuilt with GNU 12.2.0 for Linux x86_64\n",
            {
                "version": "0.5.0-dev",
                "build_number": 1,
                "commit": "0c1e570",
                "built_with": "GNU 12.2.0 for Linux x86_64",
            },
        ),
        (
            "version: 5142 (80f19b41)\nbuilt with cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu\n",
            {
                "version": None,
                "build_number": 5142,
                "commit": "80f19b41",
                "built_with": "cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu",
            },
        ),
        (
            "build: 4205 (c6bc7395) with GNU 12.2.0 for Linux x86_64\nsystem_info: n_threads = 2\n",
            {"version": None, "build_number": 4205, "commit": "c6bc7395", "built_with": "GNU 12.2.0 for Linux x86_64"},
        ),
        (
            "build: 4205 (c6bc7395) with GNU 12.2.0 for Linux x86_64 (debug)\n",
            {"version": None, "build_number": 4205, "commit": "c6bc7395", "built_with": "GNU 12.2.0 for Linux x86_64"},
        ),
        (
            "main: build = 1380 (2b4ea35)\nmain: built with cc (GCC) 13.2 for x86_64-pc-linux-gnu\nmain: seed  = 1\n",
            {
                "version": None,
                "build_number": 1380,
                "commit": "2b4ea35",
                "built_with": "cc (GCC) 13.2 for x86_64-pc-linux-gnu",
            },
        ),
        (
            "0.00.000.100 I cmn  common_param: common_params_print_info: build 10991 (930e2fa59) with Clang 17 for Darwin arm64\n",
            {"version": None, "build_number": 10991, "commit": "930e2fa59", "built_with": "Clang 17 for Darwin arm64"},
        ),
        (
            "version: 0 (unknown)\nbuilt with GNU 12 for Linux\n",
            {"version": None, "build_number": 0, "commit": None, "built_with": "GNU 12 for Linux"},
        ),
    ],
)
def test_version_banners(text, expected):
    assert parse_text(text).version == expected


def test_metric_keys_are_exactly_the_canonical_set():
    assert set(parse_text("").metrics) == set(METRIC_KEYS)
    assert len(METRIC_KEYS) == 20
    assert all(v is None for v in parse_text("").metrics.values())
    assert not math.isnan(parse_text(SPEC_2023).metrics["decode_tps"])


def test_version_text_of_both_eras_one_parser_for_probes_and_logs():
    from orchestrator.parse.version import parse_version_text

    current = "version: 0.5.0-dev (build 1, commit 0c1e570)\nbuilt with GNU 12.2.0 for Linux x86_64\n"
    assert parse_version_text(current) == {
        "version": "0.5.0-dev",
        "build_number": 1,
        "commit": "0c1e570",
        "built_with": "GNU 12.2.0 for Linux x86_64",
    }
    older = "version: 5142 (80f19b41)\nbuilt with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu\n"
    assert parse_version_text(older)["commit"] == "80f19b41"
    assert parse_version_text(older)["build_number"] == 5142
    assert parse_version_text("garbage") is None
    # A build that cannot name its commit: logs record None, the build probe keeps "unknown" to refuse it.
    unknown = "version: 0.5.0-dev (build 1, commit unknown)\n"
    assert parse_version_text(unknown)["commit"] is None
    assert parse_version_text(unknown, keep_unknown=True)["commit"] == "unknown"
