"""Pure parts of server mode: prompt sets, the server command line, metrics aggregation."""

import json
from pathlib import Path

import pytest

from orchestrator.errors import RecipeError
from orchestrator.parse.server import measured_log, server_metrics, top_choices
from orchestrator.recipe import prompts
from orchestrator.run import server, server_run

LOGS = Path(__file__).parent.parent / "fixtures" / "logs"


def test_builtin_prompt_set_covers_the_categories():
    name, items = prompts.load()
    assert name == "default" and len(items) >= 6
    assert {"chat", "code", "reasoning", "structured", "writing"} <= {p.category for p in items}


def test_prompt_sets_from_jsonl_and_toml(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"id": "a", "category": "chat", "prompt": "hi"}\n\n{"prompt": "second"}\n')
    assert [(p.id, p.category) for p in prompts.load(jsonl)[1]] == [("a", "chat"), ("2", "")]
    toml = tmp_path / "p.toml"
    toml.write_text('[[prompts]]\nid = "x"\ncategory = "code"\nprompt = "def f():"\n')
    assert prompts.load(toml)[1][0].prompt == "def f():"
    for body, message in (
        ('{"id": "a"}\n', "non-empty string `prompt`"),
        ("not json\n", "not a JSON object"),
        ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', "unique"),
    ):
        jsonl.write_text(body)
        with pytest.raises(RecipeError, match=message):
            prompts.load(jsonl)
    with pytest.raises(RecipeError, match="does not exist"):
        prompts.load(tmp_path / "none.jsonl")


def test_server_command_binds_loopback_and_adds_metrics_and_slots():
    argv = server.server_argv(["llama-server", "-m", "t.gguf"], 8123, {"--metrics"})
    assert argv[3:] == ["--host", "127.0.0.1", "--port", "8123", "--metrics"]
    assert "--metrics" not in server.server_argv(["llama-server"], 1, set())  # an old build without it
    assert server_run.server_command(["llama-server"], 4)[-2:] == ["--parallel", "4"]
    assert server_run.server_command(["llama-server", "-np", "2"], 4) == ["llama-server", "-np", "2"]


def row(predicted_n, predicted_ms, draft_n=0, accepted=0, status="ok"):
    return {
        "status": status,
        "prompt_n": 10,
        "prompt_ms": 5.0,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "draft_n": draft_n,
        "draft_n_accepted": accepted,
        "predicted_per_second": predicted_n / predicted_ms * 1000,
        "ttft_ms": 3.0,
    }


def test_server_metrics_pool_requests():
    rows = [row(100, 200.0, 50, 40), row(50, 50.0, 30, 15), row(1, 1.0, status="error")]
    parsed = server_metrics(rows, "", wall_s=2.0, concurrency=1, metrics_delta={})
    m = parsed.metrics
    assert m["decode_tps"] == pytest.approx(150 / 250 * 1000)  # pooled, not the mean of 500 and 1000
    assert parsed.extra["request_mean_decode_tps"] == pytest.approx(750)
    assert m["acceptance"] == pytest.approx(55 / 80) and (m["n_drafted"], m["n_accepted"]) == (80, 55)
    assert m["n_predict"] == 150 and parsed.extra["n_requests_ok"] == 2 and parsed.extra["aggregate_tps"] == 75
    none = server_metrics([row(10, 10.0)], "", wall_s=1.0, concurrency=1, metrics_delta={})
    assert none.metrics["acceptance"] is None


def test_each_request_counts_as_its_build_counts_it():
    """0c1e57098's server gives a request's rate over n - 1 tokens (the first token is free), older ones over n, in
    the same time window: the pooled rate counts each request the way its build's own rate says."""
    n_rate = [row(16, 8.0), row(16, 2.0)]  # rates 2000 and 8000: n / t
    new_era = [{**r, "predicted_per_second": (r["predicted_n"] - 1) / r["predicted_ms"] * 1000} for r in n_rate]
    assert server_metrics(n_rate, "", wall_s=1.0, concurrency=1, metrics_delta={}).metrics[
        "decode_tps"
    ] == pytest.approx(32 / 10.0 * 1000)
    assert server_metrics(new_era, "", wall_s=1.0, concurrency=1, metrics_delta={}).metrics[
        "decode_tps"
    ] == pytest.approx(30 / 10.0 * 1000)
    one = {**row(1, 0.001), "predicted_per_second": 0.0}  # one token: no decode step at 0c1e57098
    assert server_metrics([*new_era, one], "", wall_s=1.0, concurrency=1, metrics_delta={}).metrics[
        "decode_tps"
    ] == pytest.approx(30 / 10.001 * 1000)


def test_measured_log_drops_startup_and_warmup():
    logs = {"stdout": b"", "stderr": b"start-up\nwarm-up\nmeasured\n"}
    assert measured_log(logs, {"stderr": len(b"start-up\nwarm-up\n")}).strip() == "measured"


def test_a_run_reads_the_log_once_the_server_has_logged_the_end_of_its_requests(tmp_path):
    """llama.cpp logs from a thread of its own: the lines that end an answered request (its timings, its release)
    can reach the file after the answer. A run's log read at once ended mid-request and read back as a timeout
    (a loaded CI); the run waits, up to SETTLE_S, for the end of every request its log shows begun."""
    import threading
    from pathlib import Path
    from types import SimpleNamespace

    from orchestrator.parse.server_log import read_server_log

    recorded = Path(__file__).parent.parent / "fixtures" / "logs" / "0c1e57098" / "server-draft-reused.stderr"
    text = recorded.read_bytes()
    cut = text.index(b"slot print_timing", text.rindex(b"processing task"))  # the last request begun, not ended
    cut = text.rindex(b"\n", 0, cut) + 1
    assert read_server_log(text[:cut].decode()).unfinished and not read_server_log(text.decode()).unfinished
    err, out = tmp_path / "server.stderr", tmp_path / "server.stdout"
    err.write_bytes(text[:cut])
    out.write_bytes(b"")
    cursor = server_run.LogCursor(SimpleNamespace(stdout_path=out, stderr_path=err), fresh=True)

    def the_end_written_late():
        with err.open("ab") as log:
            log.write(text[cut:])

    late = threading.Timer(0.3, the_end_written_late)
    late.start()
    try:
        assert server_run.settled_logs(cursor, wait_s=60)["stderr"] == text  # returns once the end is there
    finally:
        late.join()
    err.write_bytes(text[:cut])  # an end that never comes: the log as it is, after the wait
    assert server_run.settled_logs(cursor, wait_s=0.1)["stderr"] == text[:cut]


@pytest.mark.parametrize(
    "era, top",
    [
        ("0c1e57098", [(421, -0.9688846468925476), (264, -1.6743746995925903)]),
        ("f49e91787", [(421, -0.9144033193588257), (264, -1.651063323020935)]),
    ],
)
def test_the_targets_top_tokens_are_read_from_each_eras_recorded_answer(era, top):
    """llama-server's /completion with n_probs (tests/fixtures/logs/record_n_probs.sh): what run/near_tie reads."""
    body = json.loads((LOGS / era / "server-n-probs.json").read_text())
    assert top_choices(body) == top
    # an answer without the list (an older era's `probs`, an error body, a damaged one) gives no judgement
    older = {"completion_probabilities": [{"content": " if", "probs": [{"tok_str": " if", "prob": 0.38}]}]}
    for other in (older, {"error": {"code": 500}}, [], {"completion_probabilities": [{"top_logprobs": [{"id": "x"}]}]}):
        assert top_choices(other) is None
