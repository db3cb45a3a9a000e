"""Acceptance figures of every method (parse/acceptance.py) on logs and /metrics bodies recorded from the real
0c1e57098 and f49e917 binaries (tests/fixtures/logs/README.md names each command)."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import parse, store
from orchestrator.parse import acceptance
from orchestrator.parse.server import counters_delta, parse_prometheus, server_metrics
from orchestrator.store.reparse import reparse_all

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
NEW, OLD = LOGS / "0c1e57098", LOGS / "f49e91787"
CANONICAL = (
    "mean_accept_len",
    "accept_rate_per_pos",
    "seq_acceptance",
    "seq_acceptance_low",
    "seq_acceptance_high",
    "spec_type",
)


def parsed(folder: Path, name: str) -> parse.ParsedLog:
    read = lambda suffix: (folder / f"{name}.{suffix}").read_bytes().decode(errors="replace")  # noqa: E731
    return parse.parse_run(read("stdout"), read("stderr"))


# (fixture, spec_type, mean length, acceptance by position over the drafts made (the printed rate x accept calls /
# #gen drafts: every draft here was kept, so the printed 0.947 of 19 steps is 18 of 19 drafts), sequence
# acceptance or None, its bounds)
METHODS = [
    # 19 drafts of 3 tokens (57): 13 reached the last position, so 13 of 19 were accepted in full.
    ("spec-simple-eagle3", "draft-eagle3", 3.53, [18 / 19, 17 / 19, 13 / 19], 13 / 19, (13 / 19, 13 / 19)),
    ("spec-simple-dspark", "draft-dspark", 3.35, [18 / 20, 17 / 20, 12 / 20], 12 / 20, (12 / 20, 12 / 20)),
    # 33 drafts but 98 tokens: one draft was one token short, and whether it was accepted in full is not said.
    ("spec-simple-mtp", "draft-mtp", 1.97, [18 / 33, 10 / 33, 4 / 33], None, (4 / 33, 5 / 33)),
    # No draft reached its second position; 36 drafts, 107 tokens: one was short (1 or 2 tokens).
    ("spec-simple-dflash", "draft-dflash", 1.81, [29 / 36], None, (0.0, 1 / 36)),
    # --spec-draft-n-max 16 clamped to the block size: the window is 7, not 16 (257 tokens in 38 drafts).
    ("spec-simple-dflash-clamped", "draft-dflash", 1.71, [27 / 38], None, (0.0, 9 / 38)),
]


@pytest.mark.parametrize("name,spec_type,mean_len,rates,seq,bounds", METHODS, ids=[m[0] for m in METHODS])
def test_each_method_gives_its_acceptance_figures(name, spec_type, mean_len, rates, seq, bounds):
    p = parsed(NEW, name)
    m = p.metrics
    assert (m["spec_type"], m["mean_accept_len"]) == (spec_type, mean_len)
    assert m["accept_rate_per_pos"] == pytest.approx(rates)
    assert m["seq_acceptance"] == (pytest.approx(seq) if seq is not None else None)
    assert (m["seq_acceptance_low"], m["seq_acceptance_high"]) == pytest.approx(bounds)
    assert p.extra["seq_acceptance_source"] == ("counters" if seq is not None else "bounds")
    # `#acc drafts` counts drafts with at least one accepted token: never below drafts accepted in full.
    stats = p.extra["draft_stats"][0]
    assert stats["acc_drafts"] / stats["gen_drafts"] >= bounds[1] - 1e-9


def test_one_line_per_draft_makes_sequence_acceptance_exact():
    """The MTP run again at -lv 5 (same seed, greedy): the same counters, and the draft lines settle the one short
    draft the -lv 4 log leaves open: it was accepted in full (5 of 33)."""
    exact, counted = parsed(NEW, "spec-simple-mtp-lv5"), parsed(NEW, "spec-simple-mtp")
    assert exact.extra["draft_stats"][0]["gen_tokens"] == counted.extra["draft_stats"][0]["gen_tokens"] == 98
    assert exact.metrics["seq_acceptance"] == pytest.approx(5 / 33)
    assert exact.extra["seq_acceptance_source"] == "draft lines"
    assert (
        counted.metrics["seq_acceptance_low"]
        <= exact.metrics["seq_acceptance"]
        <= counted.metrics["seq_acceptance_high"]
    )


@pytest.mark.parametrize(
    "folder,name",
    [
        (NEW, "spec-simple-draft-lv3"),
        (NEW, "speculative-tree"),
        (OLD, "spec-simple-draft"),
        (OLD, "spec-simple-draft-logprefix"),
        (OLD, "speculative-tree"),
        (OLD, "vocab-mismatch-translated"),
    ],
)
def test_logs_without_per_position_statistics_have_no_acceptance_figures(folder, name):
    """Default verbosity (0c1e57098) and the older era print no statistics line with rates: the figures are
    absent, never zero."""
    p = parsed(folder, name)
    assert all(p.metrics[k] is None for k in CANONICAL if k != "spec_type")
    assert not any(k.startswith("seq_acceptance") for k in p.extra)


def test_nothing_drafted_names_the_method_and_no_figures():
    m = parsed(NEW, "spec-simple-ngram-nodraft").metrics
    assert m["spec_type"] == "ngram-simple" and m["mean_accept_len"] is m["seq_acceptance"] is None


def metrics_body(when: str) -> dict[str, float]:
    return parse_prometheus((NEW / f"server-mtp-metrics-{when}.prom").read_text())


def test_the_metrics_counters_diffed_over_a_run():
    before, after = metrics_body("before"), metrics_body("after")
    assert before['spec_decode_num_accepted_tokens_per_pos_total{position="2"}'] == 3
    assert after["spec_decode_num_drafts_total"] == 56 and after["prompt_tokens_total"] == 22
    delta = counters_delta(before, after)
    assert delta == {
        "spec_decode_num_draft_tokens_total": 122,
        "spec_decode_num_accepted_tokens_total": 48,
        "spec_decode_num_drafts_total": 42,
        'spec_decode_num_accepted_tokens_per_pos_total{position="0"}': 22,
        'spec_decode_num_accepted_tokens_per_pos_total{position="1"}': 15,
        'spec_decode_num_accepted_tokens_per_pos_total{position="2"}': 14 - 3,
    }
    got = acceptance.from_counters(delta)
    assert got["mean_accept_len"] == pytest.approx(1 + 48 / 42)
    assert got["accept_rate_per_pos"] == pytest.approx([22 / 42, 15 / 42, 11 / 42])
    # 42 drafts in a window of 3 would be 126 tokens; 122 were drafted, so up to 4 drafts were short.
    assert got["seq"].value is None and (got["seq"].low, got["seq"].high) == pytest.approx((11 / 42, 15 / 42))


def test_a_server_run_reads_acceptance_from_its_counters_not_the_lifetime_statistics_line():
    """The log's statistics line counts since the server started (warm-up included): 56 drafts here, 42 in the
    run. The run's figures are the counters' growth."""
    log = (
        "spec common_specu: statistics        draft-mtp: #calls(b,g,a) = 4 56 56, #gen drafts = 56, "
        "#acc drafts = 30, #gen tokens = 164, #acc tokens = 64, #mean acc len = 2.14, #acc rate/pos = "
        "(0.518, 0.375, 0.250)\n"
    )
    row = {
        "status": "ok",
        "prompt_n": 10,
        "prompt_ms": 5.0,
        "predicted_n": 96,
        "predicted_ms": 100.0,
        "draft_n": 122,
        "draft_n_accepted": 48,
        "predicted_per_second": 960.0,
        "ttft_ms": None,
    }
    delta = counters_delta(metrics_body("before"), metrics_body("after"))
    m = server_metrics([row], log, wall_s=1.0, concurrency=1, metrics_delta=delta).metrics
    assert m["mean_accept_len"] == pytest.approx(1 + 48 / 42) and m["spec_type"] == "draft-mtp"
    assert m["accept_rate_per_pos"] == pytest.approx([22 / 42, 15 / 42, 11 / 42]) and m["seq_acceptance"] is None
    bare = server_metrics([row], log, wall_s=1.0, concurrency=1, metrics_delta={}).metrics  # no counters
    assert bare["mean_accept_len"] is bare["accept_rate_per_pos"] is bare["seq_acceptance"] is None


def test_reparse_fills_the_new_figures_of_stored_runs(tmp_path):
    con = store.connect(tmp_path / "r.duckdb")
    sweep = store.create_sweep(con, {"recipe_path": "r.j2", "recipe_hash": "h", "recipe_text": "t", "status": "done"})
    run = store.insert_run(
        con,
        {"sweep_id": sweep, "arm": "eagle3", "is_baseline": False, "repeat_index": 0, "mode": "cli", "status": "ok"},
    )
    store.save_logs(con, run, {"stdout": b"", "stderr": (NEW / "spec-simple-eagle3.stderr").read_bytes()})
    store.save_metrics(con, run, parse.parse_run("", "decoded 5 tokens in 1.0 seconds, speed: 5.0 t/s\n"))
    result = reparse_all(con)
    assert {"seq_acceptance", "spec_type", "mean_accept_len"} <= set(result.fields)
    assert con.execute("SELECT spec_type, seq_acceptance FROM metrics WHERE run_id = ?", [run]).fetchone() == (
        "draft-eagle3",
        pytest.approx(13 / 19),
    )


@st.composite
def drafts(draw):
    """A run's drafts as (length, accepted), window 1..8; some drafts shorter than the window."""
    window = draw(st.integers(1, 8))
    lengths = draw(st.lists(st.integers(1, window), min_size=1, max_size=60))
    return window, [(n, draw(st.integers(0, n))) for n in lengths]


@given(drafts())
@settings(max_examples=300, deadline=None)
def test_counter_bounds_always_hold_the_true_sequence_acceptance(case):
    """Counters as llama.cpp keeps them (per position: drafts that accepted more than i tokens): the bounds hold
    the true share of drafts accepted in full, and a value is given only when it is that share."""
    window, outcomes = case
    at_least = [float(sum(a > i for _, a in outcomes)) for i in range(max(a for _, a in outcomes))]
    true = sum(a == n for n, a in outcomes) / len(outcomes)
    seq = acceptance.seq_from_counts(len(outcomes), sum(n for n, _ in outcomes), at_least, window)
    assert seq.low - 1e-12 <= true <= seq.high + 1e-12
    if seq.value is not None:
        assert seq.value == pytest.approx(true)
    if all(n == window for n, _ in outcomes):
        assert seq.value == pytest.approx(true)


STAT_LINE = (
    "statistics draft-mtp: #calls(b,g,a) = 1 9 9, #gen drafts = 9, #acc drafts = 9, #gen tokens = 27, "
    "#acc tokens = 27, #mean acc len = 4.00, #acc rate/pos = (1.000, 1.000, 1.000)"
)


@given(st.text(max_size=400), st.text(max_size=400))
@settings(max_examples=300, deadline=None)
def test_prompt_text_never_becomes_an_acceptance_figure(prompt, noise):
    """Whatever the prompt (echoed on stdout with the generated text), even a forged statistics line or per-draft
    line, the figures come from stderr only; and no text makes the parser fail."""
    stdout = f"{prompt}\n{STAT_LINE}\naccepted 3/3 draft tokens, the last target token is: (1)\n{noise}"
    p = parse.parse_run(stdout, noise)
    assert all(p.metrics[k] is None for k in CANONICAL)


@given(
    st.lists(
        st.sampled_from(
            [
                STAT_LINE,
                "accepted 2/3 draft tokens, the last target token is: (5)",
                "accepted 0/0 draft tokens, the last",
                "partial acceptance: 1 < 3, restoring checkpoint",
                "#acc rate/pos = (",
                "n_draft   = 3",
                "requested draft size (n_max=9, n_min=0) exceeds the trained block size 4 -- clamping to 3",
                "statistics x: #calls(b,g,a) = 0 0 0, #gen drafts = 0, #acc drafts = 0, #gen tokens = 0, #acc tokens = 0, "
                "#mean acc len = 1.00, #acc rate/pos = ()",
                "statistics draft: #calls = 5, #gen drafts = 99999999999",
            ]
        )
        | st.text(),
        max_size=30,
    )
)
@settings(max_examples=300, deadline=None)
def test_any_mix_of_log_lines_parses_to_figures_in_range(lines):
    p = parse.parse_text("\n".join(lines))
    seq = p.metrics["seq_acceptance"]
    assert seq is None or 0 <= seq <= 1


def test_server_log_acceptance_per_request_in_both_wordings():
    """0c1e57098 prints the per-position rates on a trace line after its request's acceptance line; PR #24536's
    wording has them on the same line. Either way they belong to that request."""
    requests = parse.parse_text((NEW / "server-draft.stderr").read_text()).extra["server_acceptance"]
    assert [(r["accepted"], r["generated"], r["mean_len"]) for r in requests] == [
        (12, 22, 7.0),
        (12, 22, 7.0),
        (11, 23, 3.75),
        (11, 23, 3.75),
    ]
    assert requests[3]["rates_per_pos"] == [1.0, 0.75, 0.5, 0.25, 0.25] + [0.0] * 11
    line = (
        "slot print_timing: id  1 | task 0 | draft acceptance = 0.64479 (  167 accepted /   259 generated), "
        "mean acceptance length = 2.92, acceptance rate per position = (0.805, 0.632, 0.483)"
    )
    (one,) = parse.parse_text(line).extra["server_acceptance"]
    assert (one["accepted"], one["mean_len"], one["rates_per_pos"]) == (167, 2.92, [0.805, 0.632, 0.483])
    old = parse.parse_text((OLD / "server-draft-concurrency2.stderr").read_text()).extra["server_acceptance"]
    assert old and all(r["mean_len"] is None and r["rates_per_pos"] is None for r in old)  # 2025 wording


@st.composite
def server_requests(draw):
    """Requests as llama-server counts them (window n; per step a draft of up to n tokens, a accepted), then
    printed as it prints them: mean len with 2 decimals, rates over the request's steps with 3."""
    window = draw(st.integers(1, 8))
    printed, truth = [], {"steps": 0, "accepted": 0, "counts": [0] * window}
    for _ in range(draw(st.integers(1, 4))):
        steps = draw(st.lists(st.tuples(st.integers(1, window), st.integers(0, window)), min_size=1, max_size=80))
        steps = [(n, min(a, n)) for n, a in steps]
        accepted = sum(a for _, a in steps)
        counts = [sum(a > i for _, a in steps) for i in range(window)]
        printed.append(
            {
                "accepted": accepted,
                "generated": sum(n for n, _ in steps),
                "mean_len": round(1 + accepted / len(steps), 2),
                "rates_per_pos": [round(c / len(steps), 3) for c in counts],
            }
        )
        truth["steps"] += len(steps)
        truth["accepted"] += accepted
        truth["counts"] = [x + c for x, c in zip(truth["counts"], counts)]
    return printed, truth


@given(server_requests())
@settings(max_examples=300, deadline=None)
def test_request_lines_pool_to_the_true_figures_or_to_none(case):
    """Never a wrong figure: either every request's steps are told and the pooled figures are the counters' own,
    or there are none."""
    printed, truth = case
    got = acceptance.from_request_lines(printed)
    if got:
        assert got["mean_accept_len"] == pytest.approx(1 + truth["accepted"] / truth["steps"])
        assert got["accept_rate_per_pos"] == pytest.approx([c / truth["steps"] for c in truth["counts"]])


def test_request_lines_without_steps_to_tell_give_no_figures():
    nothing = {"accepted": 0, "generated": 9, "mean_len": 1.0, "rates_per_pos": [0.0, 0.0, 0.0]}
    some = {"accepted": 12, "generated": 22, "mean_len": 7.0, "rates_per_pos": [1.0] * 3 + [0.5] * 6}
    assert acceptance.from_request_lines([some])["mean_accept_len"] == 7.0
    assert acceptance.from_request_lines([some, nothing]) == {}  # steps of the idle request unknown: no pooled mean
    assert acceptance.from_request_lines([{**some, "mean_len": None, "rates_per_pos": None}]) == {}  # 2025 wording
