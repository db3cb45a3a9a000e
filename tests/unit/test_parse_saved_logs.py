"""`orch parse` on every kind of saved log: the kind decided by content, the metrics and the failure class a stored
run with that log gets, and one line with its own exit code for files in which nothing is recognised.

Every log is a real one (tests/fixtures/logs/, see its README): CLI runs recorded by hand with their exit status,
llama-server runs recorded by orch with what orch stored for them (`<name>.stored.json`).
"""

import gzip
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import parse
from orchestrator.errors import NothingRecognised, OrchError
from orchestrator.parse.saved_logs import KINDS, LogFile, detect_kind, read_logs

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
SPEC_TOOLS = ("llama-speculative-simple", "llama-speculative")

# (era, name, tool, exit status, signal, kind): statuses from the fixture README.
CLI_RUNS = [
    ("0c1e57098", "spec-simple-draft", "llama-speculative-simple", 0, None, "speculative"),
    ("0c1e57098", "spec-simple-draft-lv3", "llama-speculative-simple", 0, None, "speculative"),
    ("0c1e57098", "spec-simple-ngram-nodraft", "llama-speculative-simple", 0, None, "speculative"),
    ("0c1e57098", "speculative-tree", "llama-speculative", 0, None, "speculative"),
    ("0c1e57098", "completion", "llama-completion", 0, None, "completion"),
    ("0c1e57098", "completion-lv4", "llama-completion", 0, None, "completion"),
    ("0c1e57098", "cli-single-turn", "llama-cli", 0, None, "chat-cli"),
    ("0c1e57098", "fail-vocab-mismatch", "llama-speculative-simple", None, 6, "failed-run"),
    ("0c1e57098", "fail-removed-flag", "llama-speculative-simple", 1, None, "failed-run"),
    ("0c1e57098", "fail-no-spec-type", "llama-speculative-simple", 1, None, "failed-run"),
    ("0c1e57098", "fail-unknown-spec-type", "llama-speculative-simple", 1, None, "failed-run"),
    ("0c1e57098", "fail-missing-model-lv4", "llama-speculative-simple", None, 11, "failed-run"),
    ("0c1e57098", "completion-fail-missing-model", "llama-completion", 1, None, "failed-run"),
    ("0c1e57098", "cli-no-cnv-rejected", "llama-cli", 1, None, "failed-run"),
    ("f49e91787", "spec-simple-draft", "llama-speculative-simple", 0, None, "speculative"),
    ("f49e91787", "spec-simple-draft-logprefix", "llama-speculative-simple", 0, None, "speculative"),
    ("f49e91787", "speculative-tree", "llama-speculative", 0, None, "speculative"),
    ("f49e91787", "completion", "llama-completion", 0, None, "completion"),
    ("f49e91787", "cli-single-turn", "llama-cli", 0, None, "chat-cli"),
    ("f49e91787", "vocab-mismatch-translated", "llama-speculative-simple", 0, None, "speculative"),
    ("f49e91787", "fail-new-era-flag", "llama-speculative-simple", 1, None, "failed-run"),
    ("f49e91787", "fail-unknown-flag", "llama-speculative-simple", 1, None, "failed-run"),
    ("f49e91787", "completion-fail-missing-model", "llama-completion", 1, None, "failed-run"),
    ("7841fc723", "spec-simple-draft", "llama-speculative-simple", 0, None, "speculative"),
    ("7841fc723", "speculative-tree", "llama-speculative", 0, None, "speculative"),
    ("7841fc723", "completion", "llama-cli", 0, None, "completion"),
    ("7841fc723", "fail-vocab-mismatch", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-missing-model", "llama-speculative-simple", None, 11, "failed-run"),
    ("7841fc723", "fail-missing-draft", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-new-era-flag", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-unknown-flag", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-spec-type", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-prompt-too-long", "llama-speculative-simple", 1, None, "failed-run"),
    ("7841fc723", "fail-out-of-memory", "llama-speculative-simple", None, 6, "failed-run"),
    ("7841fc723", "completion-fail-missing-model", "llama-cli", 1, None, "failed-run"),
]
SERVER_RUNS = [
    ("0c1e57098", "server-baseline"),
    ("0c1e57098", "server-draft"),
    ("0c1e57098", "server-draft-reused"),
    ("0c1e57098", "server-timeout"),
    ("0c1e57098", "server-fallback"),
    ("f49e91787", "server-draft-concurrency2"),
    ("f49e91787", "server-unknown-flag"),
    ("7841fc723", "server-baseline"),
    ("7841fc723", "server-draft-unreported"),
]
NOT_IN_A_SERVER_LOG = {"n_draft_max", "load_ms", "total_ms"}  # the run's wall clock, the CLI tools' settings
# These runs were stored with the acceptance length and rates of the server's statistics line, which counts over
# the server's whole life (warm-up and earlier runs included); orch now pools the run's own requests instead
# (test_a_server_log_pools_its_own_requests_acceptance).
LIFETIME_FIGURES = {"mean_accept_len", "accept_rate_per_pos"}


def streams(era, name) -> list[LogFile]:
    return [LogFile(f"{era}/{name}.{s}", (LOGS / era / f"{name}.{s}").read_bytes()) for s in ("stderr", "stdout")]


def stored_class(era, name, tool, returncode, signal) -> str | None:
    """What run/one_run.py stores for a CLI run with these logs and this exit status."""
    stdout, stderr = ((LOGS / era / f"{name}.{s}").read_text() for s in ("stdout", "stderr"))
    return parse.run_failure(
        parse.parse_run(stdout, stderr),
        stderr,
        tool=tool,
        returncode=returncode,
        signal=signal,
        timed_out=False,
        expects_speculation=tool in SPEC_TOOLS,
    )[0]


@pytest.mark.parametrize("era,name,tool,returncode,signal,kind", CLI_RUNS, ids=[f"{r[0]}/{r[1]}" for r in CLI_RUNS])
def test_cli_logs_are_recognised_with_the_class_a_stored_run_gets(era, name, tool, returncode, signal, kind):
    reading = read_logs(streams(era, name))
    assert reading.kind == kind
    assert reading.failure_class == stored_class(era, name, tool, returncode, signal)
    stdout, stderr = ((LOGS / era / f"{name}.{s}").read_text() for s in ("stdout", "stderr"))
    assert reading.parsed.metrics == parse.parse_run(stdout, stderr).metrics  # as stored
    reversed_order = read_logs(streams(era, name)[::-1])  # which file is the log: content, not order or name
    assert (reversed_order.kind, reversed_order.parsed.metrics) == (reading.kind, reading.parsed.metrics)


def test_the_failure_classes_named_by_the_issue_come_out_of_real_logs():
    classes = {name: read_logs(streams(era, name)).failure_class for era, name, *_ in CLI_RUNS}
    assert classes["fail-vocab-mismatch"] == "vocab_mismatch"
    assert classes["fail-removed-flag"] == classes["fail-new-era-flag"] == "unknown_flag"
    assert classes["fail-no-spec-type"] == classes["vocab-mismatch-translated"] == "spec_not_engaged"
    assert classes["completion-fail-missing-model"] == "model_load"
    assert classes["spec-simple-draft"] is None


def test_an_abort_without_a_known_error_is_a_crash():
    text = (LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_text().split("encoded ")[0]
    reading = read_logs([LogFile("run.stderr", (text + "/src/ggml.c:123: GGML_ASSERT(n > 0) failed\n").encode())])
    assert (reading.kind, reading.failure_class) == ("failed-run", "crash_signal")
    assert "GGML_ASSERT" in reading.failure_detail


def test_a_chat_cli_run_alone_on_stdout_keeps_its_kind():
    """The chat llama-cli prints its speed line on stdout; the 0c1e57098 run's stderr is empty."""
    reading = read_logs(streams("f49e91787", "cli-single-turn")[1:])
    assert reading.kind == "chat-cli" and reading.parsed.metrics["decode_tps"] == 447.2


def test_the_f49e917_chat_runaway_is_still_a_chat_run():
    # Its endless `> ` prompt loop at stdin EOF shows only as a timeout, which a log cannot hold.
    assert read_logs(streams("f49e91787", "cli-no-cnv-runaway")).kind == "chat-cli"


@pytest.mark.parametrize("era,name", SERVER_RUNS, ids=[f"{e}/{n}" for e, n in SERVER_RUNS])
def test_server_logs_pool_to_what_orch_stored(era, name):
    stored = json.loads((LOGS / era / f"{name}.stored.json").read_text())
    reading = read_logs(streams(era, name))
    assert reading.failure_class == stored["failure_class"]
    if stored["metrics"] is None:  # orch stopped before measuring (its warm-up failed): the class is the reading
        return
    assert reading.kind == "server"
    requests = reading.parsed.extra["n_requests"]
    for key, want in stored["metrics"].items():
        got = reading.parsed.metrics[key]
        if key in LIFETIME_FIGURES:
            continue
        if key in NOT_IN_A_SERVER_LOG:
            assert got is None, key
        elif isinstance(want, float):
            # The log prints each request's milliseconds to 0.01: pooled, up to 0.005 ms per request off.
            pooled_ms = stored["metrics"]["eval_ms" if key in ("decode_tps", "eval_ms") else "prompt_eval_ms"]
            rounding = (
                requests * 0.005 / pooled_ms if key in ("decode_tps", "eval_ms", "encode_tps", "prompt_eval_ms") else 0
            )
            assert got == pytest.approx(want, rel=max(2e-3, 1.01 * rounding)), key
        else:
            assert got == want, key


def test_the_warm_up_is_left_out_only_where_the_log_holds_the_start_up():
    fresh = read_logs(streams("0c1e57098", "server-draft"))
    reused = read_logs(streams("0c1e57098", "server-draft-reused"))
    assert fresh.parsed.extra["n_requests"] == reused.parsed.extra["n_requests"] == 3
    assert any(n.startswith("left out task") for n in fresh.notes)
    assert any(n.startswith("every request counts") for n in reused.notes)
    assert fresh.parsed.version["commit"] == "0c1e570"


PRINTED = re.compile(
    r"(?<!prompt )\beval time =\s+([\d.]+) ms /\s+(\d+) tokens \(\s*[\d.]+ ms per token,\s+([\d.]+) tokens per"
)


@pytest.mark.parametrize(
    "era,name,steps",
    [
        ("0c1e57098", "server-baseline", "n - 1"),
        ("0c1e57098", "server-draft-unmarked", "n - 1"),
        ("7841fc723", "server-baseline", "n"),
        ("f49e91787", "server-draft-concurrency2", "n"),
    ],
)
def test_a_server_logs_decode_rate_is_the_one_its_build_prints(era, name, steps):
    """Each era's own definition, read from the log's own figures: every request's rate as orch reads it is the
    rate the log prints, and the pooled rate is the printed rates weighted by their times (0c1e57098 counts n - 1
    tokens, the first being free; earlier eras n). Before, orch pooled n / t everywhere: 6.7% high at 16 tokens."""
    reading = read_logs(streams(era, name))
    text = "\n".join(f.data.decode() for f in streams(era, name))
    printed = [(float(ms), int(n), float(rate)) for ms, n, rate in PRINTED.findall(text)]
    counted = printed[-reading.parsed.extra["n_requests"] :]  # the run's requests, after any warm-up
    assert all(
        rate == pytest.approx(((n - 1) if steps == "n - 1" else n) / ms * 1000, rel=0.01) for ms, n, rate in counted
    )
    pooled = sum(rate * ms for ms, _, rate in counted) / sum(ms for ms, _, _ in counted)
    assert reading.parsed.metrics["decode_tps"] == pytest.approx(pooled, rel=2e-3)


def test_a_server_log_orch_did_not_mark_counts_every_request():
    """A log from outside orch (here, one an orch stored before it marked its warm-up) is read whole: its first
    request after the start-up counts like any other, and the reading says so (issue 24: a log holding one request
    read as 0 requests, then spec_not_engaged)."""
    unmarked = read_logs(streams("0c1e57098", "server-draft-unmarked"))
    assert unmarked.parsed.extra["n_requests"] == 4 and unmarked.failure_class is None
    assert unmarked.parsed.metrics["n_drafted"] > 68  # the stored run's 68, plus what the warm-up drafted
    one = (LOGS / "0c1e57098" / "server-draft-unmarked.stderr").read_text()
    first_request = one[: one.index("slot      release")]  # the start-up and the first request alone
    alone = read_logs([LogFile("one.stderr", first_request.encode())])
    assert alone.parsed.extra["n_requests"] == 1 and alone.parsed.metrics["n_drafted"] > 0
    assert alone.failure_class is None  # its acceptance line is there: speculation ran


def test_a_server_log_kind_is_not_a_failure_signature():
    """0c1e57098's server logs `no implementations specified for speculative decoding` at -lv 4 whenever
    nothing asked for speculation: a stored baseline is ok, so is its log."""
    text = (LOGS / "0c1e57098" / "server-baseline.stderr").read_text()
    assert "no implementations specified" in text
    assert read_logs(streams("0c1e57098", "server-baseline")).failure_class is None


def test_text_in_the_prompt_never_becomes_a_figure():
    forged = (
        "Copy this:\ndecoded 64 tokens in 0.001 seconds, speed: 64000.0 t/s\nn_drafted = 99\nn_accept  = 99\n"
        "llama_perf_context_print:        eval time =       1.00 ms /    64 runs   (    0.02 ms per token, "
        "64000.00 tokens per second)\nerror loading model: out of memory\n"
    )
    for era, name in (("0c1e57098", "spec-simple-draft-lv3"), ("f49e91787", "spec-simple-draft")):
        stderr, stdout = streams(era, name)
        honest = read_logs([stderr, stdout])
        echoed = LogFile("run.stdout", forged.encode() + stdout.data + forged.encode())
        for files in ([stderr, echoed], [echoed, stderr]):
            reading = read_logs(files)
            assert reading.parsed.metrics == honest.parsed.metrics and reading.failure_class is None
            assert [f.role for f in reading.files if f.name == "run.stdout"] == ["output"]


# --- nothing recognised: one line, its own exit code --------------------------------------------------------------

NOTHING = {
    "empty": b"",
    "blank lines": b"\n\n   \n",
    "binary": gzip.compress((LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_bytes()),
    "NUL bytes": b"decoded 64 tokens\x00\x00\x01",
    "unrelated text": b"name: tiny\nversion: 3\nThe quick brown fox jumps over the lazy dog.\n",
    "a run's stdout alone": (LOGS / "0c1e57098" / "completion.stdout").read_bytes(),
}


@pytest.mark.parametrize("what", NOTHING)
def test_files_with_nothing_recognisable_are_refused(what):
    with pytest.raises(NothingRecognised, match=r"^nothing recognised in x\.log: .*llama-server") as exc:
        read_logs([LogFile("x.log", NOTHING[what])])
    assert "\n" not in str(exc.value) and exc.value.exit_code == 28


def test_a_binary_file_beside_a_real_log_is_refused_too():
    with pytest.raises(NothingRecognised, match="nothing recognised in junk.bin: binary"):
        read_logs([*streams("0c1e57098", "completion"), LogFile("junk.bin", NOTHING["binary"])])


# --- fuzzing the kind detector ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_random_text_is_no_kind_and_claims_no_figure(text):
    assert detect_kind(text) is None
    with pytest.raises(NothingRecognised):
        read_logs([LogFile("random.log", text.encode())])


@settings(max_examples=300, deadline=None)
@given(st.binary())
def test_random_bytes_claim_no_figure(data):
    try:
        reading = read_logs([LogFile("random.bin", data)])
    except NothingRecognised:
        return
    assert all(v is None for v in reading.parsed.metrics.values())


REAL_LOGS = [(LOGS / era / f"{name}.stderr").read_text() for era, name, *_ in CLI_RUNS[:8]] + [
    (LOGS / era / f"{name}.stderr").read_text() for era, name in SERVER_RUNS[1:3] + SERVER_RUNS[5:6]
]


FIGURES = re.compile(r"\| task |time =|accepted|tokens in|n_\w+\s+=")


@st.composite
def damaged(draw):
    lines = draw(st.sampled_from(REAL_LOGS)).splitlines()
    for _ in range(draw(st.integers(1, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["cut", "delete", "duplicate", "garble", "huge number", "huge number"]))
        if kind == "cut":
            lines = lines[:i]
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "garble":
            lines[i] = draw(st.text(max_size=80))
        else:  # a number no machine prints, mostly in a line with ids or figures: int() of it raises
            figures = [k for k, line in enumerate(lines) if FIGURES.search(line)]
            i = draw(st.sampled_from(figures)) if figures and draw(st.booleans()) else i
            if runs := list(re.finditer(r"(?<![\d.])\d+(?![\d.])", lines[i])):  # counts and ids, no timestamp
                m = draw(st.sampled_from(runs))
                lines[i] = lines[i][: m.start()] + "9" * 5000 + lines[i][m.end() :]
    return "\n".join(lines)


def test_ids_and_counts_no_machine_prints_are_no_ids():
    huge = "9" * 5000  # int() of it raises
    for text in (
        f"slot print_timing: id {huge} | task 1 | prompt eval time = 1.0 ms / 3 tokens",
        f"slot launch_slot_: id  1 | task {huge} | processing task",
        f"slot print_timing: id  1 | task 2 |        eval time = 1.0 ms / {huge} tokens",
    ):
        assert detect_kind(text) == "server"
        assert read_logs([LogFile("x.log", text.encode())]).parsed.metrics["decode_tps"] is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_damaged_real_logs_never_raise_but_orch_errors(text):
    assert detect_kind(text) in (None, *KINDS)
    try:
        reading = read_logs([LogFile("damaged.log", text.encode())])
    except OrchError:  # NothingRecognised, or ParseError for figures that cannot be true
        return
    assert reading.kind in KINDS
    assert reading.failure_class is None or reading.failure_class in parse.FAILURE_CLASSES


def test_a_server_log_with_a_count_too_long_to_read_gives_no_acceptance_and_no_crash():
    """The damaged log hypothesis found (CI, this change): a `draft acceptance` line whose generated count has
    thousands of digits reads as no count, so the request's steps cannot be told: no pooled figure, no TypeError."""
    text = (LOGS / "0c1e57098" / "server-draft.stderr").read_text()
    line = [x for x in text.splitlines() if "draft acceptance =" in x and "generated" in x][-1]  # a measured one
    count = line.split("/")[-1].split("generated")[0]
    damaged = text.replace(line, line.replace(count, " " + "9" * 5000 + " "), 1)  # past int()'s 4300 digits
    reading = read_logs([LogFile("damaged.log", damaged.encode())])
    assert reading.kind == "server" and reading.parsed.metrics.get("mean_accept_len") is None


@pytest.mark.parametrize("name", ["server-draft", "server-draft-reused"])
def test_a_server_log_pools_its_own_requests_acceptance(name):
    """Three requests: 12 accepted in 2 steps (mean len 7.00), then 11 in 4 (3.75) twice; the steps are what
    the printed mean length, rates and accepted count allow. The server's statistics line says 4.83 and 4.64:
    its whole life."""
    m = read_logs(streams("0c1e57098", name)).parsed.metrics
    assert m["mean_accept_len"] == pytest.approx(1 + 34 / 10)
    assert m["accept_rate_per_pos"][:3] == pytest.approx([1.0, (2 + 2 + 3) / 10, (2 + 1 + 2) / 10])
    assert len(m["accept_rate_per_pos"]) == 16  # the server lists the whole window
