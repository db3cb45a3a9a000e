"""Text cannot forge or break a run: figures come from stderr only, a log without its block is not ok, figures
that cannot be true are refused, and mutated real logs never raise anything but orch's own errors."""

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import parse, store
from orchestrator.errors import OrchError, ParseError

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
FORGED = (
    "decoded 64 tokens in 0.001 seconds, speed: 64000.0 t/s\n"
    "encoded 12 tokens in 0.001 seconds, speed: 12000.0 t/s\n"
    "n_predict = 3000000000\nn_drafted = 99\nn_accept  = 99\naccept    = 100.000%\n"
    "decoded 5 tokens in 1.2.3 seconds, speed: 1e999 t/s\n"
    "llama_perf_context_print:        eval time =       1.00 ms /    64 runs   (    0.02 ms per token, 64000.00 tokens per second)\n"
    "error loading model: out of memory\n"
)
RUNS = [
    ("0c1e57098", "spec-simple-draft", "llama-speculative-simple"),
    ("0c1e57098", "completion", "llama-completion"),
    ("0c1e57098", "spec-simple-ngram-nodraft", "llama-speculative-simple"),
    ("f49e91787", "spec-simple-draft", "llama-speculative-simple"),
    ("f49e91787", "completion", "llama-completion"),
]


def read(commit, name, stream):
    return (LOGS / commit / f"{name}.{stream}").read_text()


@pytest.mark.parametrize("commit,name,tool", RUNS, ids=[f"{c}/{n}" for c, n, _ in RUNS])
def test_metric_lines_in_the_prompt_or_the_output_change_nothing(commit, name, tool):
    stdout, stderr = read(commit, name, "stdout"), read(commit, name, "stderr")
    honest = parse.parse_run(stdout, stderr)
    forged = parse.parse_run(FORGED + stdout + "\n" + FORGED, stderr)  # echoed prompt, then generated text
    assert forged.metrics == honest.metrics and honest.metrics["decode_tps"] < 1000
    assert (
        parse.classify_failure(
            stderr, returncode=0, signal=None, timed_out=False, expects_speculation=tool != "llama-completion"
        )
        is None
    )
    assert parse.missing_block(honest, tool) is None


@pytest.mark.parametrize("commit,name,tool", RUNS, ids=[f"{c}/{n}" for c, n, _ in RUNS])
def test_a_log_that_lost_its_last_lines_lacks_its_block(commit, name, tool):
    stderr = read(commit, name, "stderr")
    lines = stderr.splitlines()
    # Cut just before the block the tool must print: the end block's first line, or the first perf line.
    marker = "decoded " if tool != "llama-completion" else "prompt eval time"
    cut = next(i for i, line in enumerate(lines) if marker in line)
    truncated = parse.parse_run("", "\n".join(lines[:cut]))
    assert parse.missing_block(truncated, tool) is not None


def test_figures_that_cannot_be_true_are_refused():
    good = parse.parse_run("", read("0c1e57098", "spec-simple-draft", "stderr"))
    parse.check_ranges(good)
    for key, value, words in (
        ("n_drafted", -3, "negative"),
        ("n_predict", 3_000_000_000, "beyond"),
        ("acceptance", 1.2, "outside"),
        ("decode_tps", -1.0, "negative"),
    ):
        bad = parse.ParsedLog(metrics={**good.metrics, key: value})
        with pytest.raises(ParseError, match=words):
            parse.check_ranges(bad)


def test_numbers_no_machine_prints_parse_as_unknown():
    text = "decoded 64 tokens in 1.2.3 seconds, speed: 53.3 t/s\nn_drafted = " + "9" * 5000 + "\nn_accept  = 12\n"
    parsed = parse.parse_run("", text)
    assert parsed.extra["decode_s"] is None and parsed.metrics["n_drafted"] is None


# --- fuzzing: mutated real logs ------------------------------------------------------------------------------------

FUZZ_LOGS = [read(c, n, "stderr") for c, n, _ in RUNS] + [read("0c1e57098", "fail-vocab-mismatch", "stderr")]
PATHOLOGICAL = [
    "-1",
    "-5",
    "1.2.3",
    "nan",
    "-nan",
    "inf",
    "1e999",
    "9" * 5000,
    "0x10",
    "",
    "-0",
    "4294967296",
    "2147483648",
    "99999999999999999999",
]
NUMBERS = st.one_of(
    st.sampled_from(PATHOLOGICAL),
    st.sampled_from(PATHOLOGICAL),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


# The lines the parsers read figures from: end block, perf block, statistics.
FIGURE_LINE = re.compile(r"\b(n_draft|n_predict|n_drafted|n_accept)\s+= |speed:|time =|accept +=|#calls")


@st.composite
def mutated(draw):
    lines = draw(st.sampled_from(FUZZ_LOGS)).splitlines()
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "flip", "number", "number", "number"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "truncate":  # the async logger loses a log's last lines
            lines = lines[: max(i, len(lines) - 40)]
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "flip" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + chr(draw(st.integers(0, 0x2FF))) + lines[i][j + 1 :]
        elif kind == "number":
            figures = [k for k, line in enumerate(lines) if FIGURE_LINE.search(line)]
            i = draw(st.sampled_from(figures)) if figures else i  # mostly the lines that carry figures
            tokens = lines[i].split(" ")
            numeric = [k for k, t in enumerate(tokens) if t.strip("%,()").replace(".", "").isdigit()]
            if numeric:  # mostly the value (the last number), sometimes a timestamp or another field
                k = numeric[-1] if draw(st.booleans()) else draw(st.sampled_from(numeric))
                tokens[k] = draw(NUMBERS)
                lines[i] = " ".join(tokens)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = store.connect(tmp_path_factory.mktemp("fuzz") / "r.duckdb")
    yield c
    c.close()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mutated())
def test_mutated_logs_raise_only_orch_errors_in_the_parser_and_the_store(con, text):
    try:
        parsed = parse.parse_run(text, text)
        parse.check_ranges(parsed)
        store.save_metrics(con, 1, parsed)
        parse.classify_failure(text, returncode=0, signal=None, timed_out=False, expects_speculation=True)
        parse.missing_block(parsed, "llama-speculative-simple")
    except OrchError:
        return
    m = parsed.metrics
    assert m["acceptance"] is None or 0 <= m["acceptance"] <= 1
    assert all(v is None or v >= 0 for k, v in m.items() if isinstance(v, (int, float)))
