"""classify_failure over every recorded run, with the exit status it really had (see the fixtures' README)."""

from pathlib import Path

import pytest

from orchestrator.parse import FAILURE_CLASSES, classify_failure

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
SIGABRT, SIGSEGV = 6, 11


def both(commit: str, name: str) -> str:
    return (LOGS / commit / f"{name}.stdout").read_text() + (LOGS / commit / f"{name}.stderr").read_text()


# (commit dir, fixture, returncode, signal, expects_speculation, expected class)
RECORDED = [
    ("0c1e57098", "spec-simple-draft", 0, None, True, None),
    ("0c1e57098", "spec-simple-draft-lv3", 0, None, True, None),
    ("0c1e57098", "speculative-tree", 0, None, True, None),
    ("0c1e57098", "completion", 0, None, False, None),
    # The n-gram method ran (its statistics line counts 49 calls) but found nothing to draft: not a failure.
    ("0c1e57098", "spec-simple-ngram-nodraft", 0, None, True, None),
    ("0c1e57098", "fail-vocab-mismatch", None, SIGABRT, True, "vocab_mismatch"),
    ("0c1e57098", "fail-removed-flag", 1, None, True, "unknown_flag"),
    ("0c1e57098", "fail-unknown-spec-type", 1, None, True, "spec_unsupported"),
    # The models do not fit the method, found only by the binary (issue 14): not a crash, not a flag.
    ("0c1e57098", "fail-spec-eagle3-plain-draft", None, SIGABRT, True, "spec_unsupported"),
    ("0c1e57098", "fail-spec-mtp-no-nextn", 1, None, True, "spec_unsupported"),
    ("0c1e57098", "fail-spec-dflash-eagle3-draft", 1, None, True, "spec_unsupported"),
    ("0c1e57098", "fail-no-spec-type", 1, None, True, "spec_not_engaged"),
    ("0c1e57098", "completion-fail-missing-model", 1, None, False, "model_load"),
    ("0c1e57098", "fail-missing-model-lv4", None, SIGSEGV, True, "model_load"),
    # The segfault kills the asynchronous logger before it writes a line: nothing but the signal is left.
    ("0c1e57098", "fail-missing-model", None, SIGSEGV, True, "crash_signal"),
    ("0c1e57098", "cli-single-turn", 0, None, False, None),
    ("0c1e57098", "cli-no-cnv-rejected", 1, None, False, "unknown_flag"),
    ("f49e91787", "spec-simple-draft", 0, None, True, None),
    ("f49e91787", "spec-simple-draft-logprefix", 0, None, True, None),
    ("f49e91787", "speculative-tree", 0, None, True, None),
    ("f49e91787", "completion", 0, None, False, None),
    ("f49e91787", "cli-single-turn", 0, None, False, None),
    # A gpt2-vocab draft is accepted here (tokens translated), then drafts nothing at p_min 0.9.
    ("f49e91787", "vocab-mismatch-translated", 0, None, True, "spec_not_engaged"),
    ("f49e91787", "fail-new-era-flag", 1, None, True, "unknown_flag"),
    ("f49e91787", "fail-unknown-flag", 1, None, True, "unknown_flag"),
    ("f49e91787", "completion-fail-missing-model", 1, None, False, "model_load"),
    ("f49e91787", "fail-missing-model", None, SIGSEGV, True, "crash_signal"),
    # stdout cut by `head -c 8192`, which ended the endless `> ` prompt loop with SIGPIPE.
    ("f49e91787", "cli-no-cnv-runaway", None, 13, False, "crash_signal"),
    # llama-cpp-python 0.3.8's tree (spring 2025): its own words for the same failures.
    ("7841fc723", "spec-simple-draft", 0, None, True, None),
    ("7841fc723", "speculative-tree", 0, None, True, None),
    ("7841fc723", "completion", 0, None, False, None),
    ("7841fc723", "fail-vocab-mismatch", 1, None, True, "vocab_mismatch"),
    ("7841fc723", "fail-missing-model", None, SIGSEGV, True, "model_load"),  # this era's logger kept its lines
    ("7841fc723", "fail-missing-draft", 1, None, True, "model_load"),
    ("7841fc723", "fail-new-era-flag", 1, None, True, "unknown_flag"),
    ("7841fc723", "fail-unknown-flag", 1, None, True, "unknown_flag"),
    ("7841fc723", "fail-spec-type", 1, None, True, "unknown_flag"),  # no --spec-type in this era at all
    ("7841fc723", "fail-prompt-too-long", 1, None, True, "other"),
    ("7841fc723", "fail-out-of-memory", None, SIGABRT, True, "out_of_memory"),
    ("7841fc723", "completion-fail-missing-model", 1, None, False, "model_load"),
]


@pytest.mark.parametrize(
    "commit,name,returncode,sig,expects,expected", RECORDED, ids=[f"{c}/{n}" for c, n, *_ in RECORDED]
)
def test_recorded_runs(commit, name, returncode, sig, expects, expected):
    got = classify_failure(
        both(commit, name), returncode=returncode, signal=sig, timed_out=False, expects_speculation=expects
    )
    assert got == expected


def test_timeout_wins_over_everything():
    text = both("0c1e57098", "fail-vocab-mismatch")
    assert classify_failure(text, returncode=None, signal=9, timed_out=True, expects_speculation=True) == "timeout"


def test_success_without_expectation_ignores_missing_end_block():
    text = both("0c1e57098", "spec-simple-ngram-nodraft")
    assert classify_failure(text, returncode=0, signal=None, timed_out=False, expects_speculation=False) is None


def test_exit_zero_without_any_output_is_not_engaged_when_speculation_expected():
    assert (
        classify_failure("", returncode=0, signal=None, timed_out=False, expects_speculation=True) == "spec_not_engaged"
    )


@pytest.mark.parametrize("returncode,sig", [(134, None), (-11, None), (None, 9)])
def test_signal_forms(returncode, sig):
    assert (
        classify_failure("", returncode=returncode, signal=sig, timed_out=False, expects_speculation=False)
        == "crash_signal"
    )


def test_plain_nonzero_exit_is_other():
    assert (
        classify_failure(
            "main: error: something new\n", returncode=2, signal=None, timed_out=False, expects_speculation=False
        )
        == "other"
    )


@pytest.mark.parametrize(
    "line",
    [
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory",
        "alloc_tensor_range: failed to allocate CUDA0 buffer of size 9437184000",
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
        "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
        "graph_reserve: failed to allocate compute pp buffers",
    ],
)
def test_out_of_memory_signatures_beat_model_load(line):
    text = f"0.00.100.000 E {line}\n0.00.100.001 E llama_model_load_from_file_impl: failed to load model\n"
    assert (
        classify_failure(text, returncode=1, signal=None, timed_out=False, expects_speculation=True) == "out_of_memory"
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        ("error: invalid argument: -cd\n", "unknown_flag"),
        ("error: unknown argument: --draft\n", "unknown_flag"),
        (
            "common_speculative_are_compatible: draft model vocab must match target model to use speculation but "
            "token 100 content differs - target 'a', draft 'b'\n",
            "vocab_mismatch",
        ),
        (
            "speculative: draft model bos tokens must match target model to use speculation. add: 1 - 0, id: 1 - 2)\n",
            "vocab_mismatch",
        ),
        ("common_speculative_init_result: failed to load draft model, 'd.gguf'\n", "model_load"),
        ("srv    load_model: failed to load model, 'm.gguf'\n", "model_load"),
    ],
)
def test_other_signatures(text, expected):
    assert classify_failure(text, returncode=1, signal=None, timed_out=False, expects_speculation=True) == expected


def test_server_log_with_drafting_counts_as_engaged():
    text = "0.06.896.015 I slot print_timing: id  1 | task 0 | draft acceptance = 0.64479 (  167 accepted /   259 generated), mean len =  2.92\n"
    assert classify_failure(text, returncode=0, signal=None, timed_out=False, expects_speculation=True) is None


def test_classes_are_the_documented_set():
    assert FAILURE_CLASSES == (
        "vocab_mismatch",
        "unknown_flag",
        "model_load",
        "out_of_memory",
        "timeout",
        "crash_signal",
        "spec_not_engaged",
        "truncated_log",
        "parse_error",
        "other",
        "spec_unsupported",
        "spec_mismatch",
    )
    page = (Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text()
    assert all(f"`{name}`" in page for name in FAILURE_CLASSES)


def test_ngram_method_that_found_nothing_to_draft_still_ran():
    # Recorded from 0c1e57098 llama-speculative-simple --spec-type ngram-mod on a prompt without repeats.
    text = (
        "0.00.171.458 I n_drafted = 0\n0.00.171.459 I n_accept  = 0\n0.00.171.459 I accept    = -nan%\n"
        "0.00.171.504 I spec common_specu: statistics        ngram-mod: #calls(b,g,a) =    1     49      0, "
        "#gen drafts =      0, #acc drafts =     0, #gen tokens =      0, #acc tokens =     0, "
        "dur(b,g,a) = 0.000, 0.040, 0.000 ms\n"
    )
    assert classify_failure(text, returncode=0, signal=None, timed_out=False, expects_speculation=True) is None
    # An end block alone (draft_min above every draft) is a measurement too; translated vocabularies are not.
    no_stats = "n_drafted = 0\nn_accept  = 0\naccept    = -nan%\n"
    assert classify_failure(no_stats, returncode=0, signal=None, timed_out=False, expects_speculation=True) is None
    translated = "the target and draft vocabs are not compatible - tokens will be translated between the two\n"
    assert (
        classify_failure(translated + no_stats, returncode=0, signal=None, timed_out=False, expects_speculation=True)
        == "spec_not_engaged"
    )


def test_a_speculative_log_cut_before_its_figures_is_truncated_not_spec_not_engaged():
    """llama.cpp under load can exit 0 with its last lines lost (its log thread): cut before the end block and the
    statistics line, the log cannot tell whether speculation ran, so the stored class is truncated_log (seen as a
    mislabelled spec_not_engaged run in an issue-14 sweep)."""
    from orchestrator import parse

    stdout = (LOGS / "0c1e57098" / "spec-simple-draft.stdout").read_text()
    lines = (LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_text().splitlines(keepends=True)
    cut = "".join(lines[:250])  # before `decoded ... tokens`, n_drafted and the statistics line
    assert (
        classify_failure(cut, returncode=0, signal=None, timed_out=False, expects_speculation=True)
        == "spec_not_engaged"
    )  # the log alone, without the end-block rule
    failure, missing = parse.run_failure(
        parse.parse_run(stdout, cut),
        cut,
        tool="llama-speculative-simple",
        returncode=0,
        signal=None,
        timed_out=False,
        expects_speculation=True,
    )
    assert (failure, missing) == (
        "truncated_log",
        "the speculative end block (decoded tokens and speed, drafted and accepted counts)",
    )
    whole = "".join(lines)
    assert parse.run_failure(
        parse.parse_run(stdout, whole),
        whole,
        tool="llama-speculative-simple",
        returncode=0,
        signal=None,
        timed_out=False,
        expects_speculation=True,
    ) == (None, None)


def test_a_speculative_log_cut_after_its_counters_is_truncated():
    """Cut after the end block's counters, before the statistics line and the target's perf block (a CI run with
    one core busy beside it stored such an MTP run ok, without its draft statistics): truncated_log, run again."""
    from orchestrator import parse

    stdout = (LOGS / "0c1e57098" / "spec-simple-draft.stdout").read_text()
    lines = (LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_text().splitlines(keepends=True)
    cut = "".join(lines[: next(i for i, line in enumerate(lines) if line.rstrip().endswith("draft:"))])
    parsed = parse.parse_run(stdout, cut)
    assert parsed.metrics["n_drafted"] and "draft_stats" not in parsed.extra  # the counters stayed, stats went
    failure, missing = parse.run_failure(
        parsed,
        cut,
        tool="llama-speculative-simple",
        returncode=0,
        signal=None,
        timed_out=False,
        expects_speculation=True,
    )
    assert (failure, missing) == ("truncated_log", "the lines after the end block (statistics, the target's perf)")


def test_a_control_log_cut_after_its_speed_line_is_truncated_not_spec_not_engaged():
    """A control arm drafts nothing by design: its log cut after `decoded ... tokens` (counters and statistics
    lost) was stored spec_not_engaged (1 of ~330 runs in the issue-26 trials). Speed without counters is a cut
    log: truncated_log, never a verdict on speculation."""
    from orchestrator import parse

    path = LOGS / "0c1e57098" / "spec-simple-ngram-nodraft"
    stdout = path.with_suffix(".stdout").read_text()
    lines = path.with_suffix(".stderr").read_text().splitlines(keepends=True)
    cut = "".join(lines[: next(i for i, line in enumerate(lines) if "n_draft " in line)])  # after `decoded`
    assert "decoded" in cut and "n_drafted" not in cut
    parsed = parse.parse_run(stdout, cut)
    assert parsed.metrics["decode_tps"] is not None  # the speed survived, the counters did not
    failure, missing = parse.run_failure(
        parsed,
        cut,
        tool="llama-speculative-simple",
        returncode=0,
        signal=None,
        timed_out=False,
        expects_speculation=True,
    )
    assert failure == "truncated_log" and "drafted and accepted counts" in missing
    whole = "".join(lines)
    assert parse.run_failure(
        parse.parse_run(stdout, whole),
        whole,
        tool="llama-speculative-simple",
        returncode=0,
        signal=None,
        timed_out=False,
        expects_speculation=True,
    ) == (None, None)


# --- decide_failure: the one decision, at run time (the exit known) and for saved logs (parse/saved_logs.py) -------

ABORT = "load_tensors: loading model\n/src/ggml.c:123: GGML_ASSERT(n > 0) failed\n"


def test_an_abort_line_stands_for_the_signal_only_where_the_exit_is_unknown():
    from orchestrator.parse import Ended, Failure, decide_failure

    saved = decide_failure(ABORT, expects_speculation=True)
    assert saved == Failure("crash_signal", line="/src/ggml.c:123: GGML_ASSERT(n > 0) failed")
    assert decide_failure(ABORT, expects_speculation=True, ended=Ended(None, 6)) == Failure("crash_signal")
    assert decide_failure(ABORT, expects_speculation=True, ended=Ended(1, None)) == Failure("other")  # the exit says
    assert decide_failure(ABORT, expects_speculation=True, ended=Ended(None, 9, timed_out=True)) == Failure("timeout")


def test_a_known_error_line_comes_with_its_line_whatever_the_exit():
    from orchestrator.parse import Ended, decide_failure

    text = both("0c1e57098", "fail-removed-flag")
    for ended in (None, Ended(1, None), Ended(None, 6)):
        found = decide_failure(text, expects_speculation=True, ended=ended)
        assert found.name == "unknown_flag" and "argument" in found.line and found.missing is None


def test_a_cut_log_is_truncated_the_same_at_run_time_and_from_saved_logs():
    from orchestrator import parse
    from orchestrator.parse.saved_logs import LogFile, read_logs

    lines = (LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_text().splitlines(keepends=True)
    cut = "".join(lines[: next(i for i, line in enumerate(lines) if line.rstrip().endswith("draft:"))])  # counters kept
    parsed = parse.parse_run("", cut)
    at_run = parse.decide_failure(
        cut, expects_speculation=True, parsed=parsed, tool="llama-speculative-simple", ended=parse.Ended(0, None)
    )
    saved = parse.decide_failure(cut, expects_speculation=True, parsed=parsed, tool="llama-speculative-simple")
    assert at_run == saved and at_run.name == "truncated_log" and "statistics" in at_run.missing
    reading = read_logs([LogFile("run.stderr", cut.encode())])
    assert (reading.kind, reading.failure_class) == ("speculative", "truncated_log")
    assert at_run.missing in reading.failure_detail


def test_the_block_check_comes_before_never_drafted():
    from orchestrator import parse

    lines = (LOGS / "0c1e57098" / "spec-simple-draft.stderr").read_text().splitlines(keepends=True)
    cut = "".join(lines[:250])  # before the end block and the statistics line: drafting cannot be told
    exit_0 = parse.Ended(0, None)
    assert parse.decide_failure(cut, expects_speculation=True, ended=exit_0).name == "spec_not_engaged"
    checked = parse.decide_failure(
        cut, expects_speculation=True, parsed=parse.parse_run("", cut), tool="llama-speculative-simple", ended=exit_0
    )
    assert checked.name == "truncated_log"


def test_a_server_that_never_served_is_classed_by_one_rule_live_and_saved():
    """run/server.py stores a server that exited while starting by parse/server_failure.start_failure, and
    `orch parse` reads a saved log by the same rule with the exit unknown: an error line wins either way."""
    from orchestrator.parse.failure import Ended
    from orchestrator.parse.server_failure import start_failure

    refused = "main: loading model\nthe target and draft vocabs are not compatible\n"
    loading = "main: loading model\nllama_model_loader: loaded meta data\n"
    aborted = "main: loading model\nGGML_ASSERT(n > 0) failed\nAborted (core dumped)\n"
    assert start_failure(refused, Ended(returncode=1, signal=None)).name == "vocab_mismatch"
    assert start_failure(refused, None).name == "vocab_mismatch"
    assert start_failure(loading, Ended(returncode=1, signal=None)).name == "other"  # it exited without a word
    assert start_failure(loading, Ended(returncode=None, signal=9)).name == "crash_signal"
    assert start_failure(loading, None).name == "timeout"  # a saved log ending while the model loads
    assert start_failure(aborted, None).name == "crash_signal"  # the abort line stands in for the signal
