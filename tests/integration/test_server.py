"""Server mode with the real llama-server over real HTTP: requests stored, speculation checked, no orphans."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from integration.conftest import (
    CACHE,
    COMMIT,
    assert_reparse_changes_nothing,
    db_rows,
    llama_servers_under,
    orch_run,
    run_orch,
)

ROOT = Path(__file__).resolve().parents[2]
SERVER_SPEC = ROOT / "recipes" / "server_spec.j2"
TINY_VARS = str(ROOT / "recipes" / "tiny.toml")


def test_server_spec_stores_requests_for_every_arm(orch_exe, env):
    res = orch_run(orch_exe, SERVER_SPEC, "--vars", TINY_VARS, "--set", "n_predict=48", env=env)
    assert res.returncode == 0, res.stderr
    per_run = db_rows(
        env,
        """
        SELECT r.arm, r.status, r.prompt_set, count(q.seq) AS n, sum(q.draft_n) AS drafted,
               sum(q.draft_n_accepted) AS accepted, sum(q.predicted_n) AS predicted, sum(q.predicted_ms) AS ms,
               min(q.ttft_ms) AS ttft, count(DISTINCT q.output_sha256) AS outputs, any_value(r.executed_argv) AS argv
        FROM runs r JOIN requests q ON q.run_id = r.id GROUP BY r.id, r.arm, r.status, r.prompt_set ORDER BY r.id""",
    )
    by_arm = {r["arm"]: r for r in per_run}
    assert set(by_arm) == {"baseline", "draft", "ngram"} and all(r["status"] == "ok" for r in per_run)
    assert all(r["n"] == 10 and r["prompt_set"].startswith("default@") and r["ttft"] > 0 for r in per_run)
    assert by_arm["baseline"]["drafted"] == 0 and by_arm["draft"]["drafted"] > 0
    argv = json.loads(by_arm["draft"]["argv"])
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--metrics" in argv and "--spec-type" in argv

    metrics = {r["arm"]: r for r in db_rows(env, "SELECT r.arm, m.* FROM runs r JOIN metrics m ON m.run_id = r.id")}
    draft = metrics["draft"]
    assert draft["acceptance"] == pytest.approx(by_arm["draft"]["accepted"] / by_arm["draft"]["drafted"])
    # pooled as 0c1e57098's server counts a request: all its tokens but the first (free: the last prompt batch's)
    assert draft["decode_tps"] == pytest.approx(
        (by_arm["draft"]["predicted"] - by_arm["draft"]["n"]) / by_arm["draft"]["ms"] * 1000
    )
    extra = json.loads(draft["extra"])
    delta = extra["metrics_delta"]
    assert delta["spec_decode_num_draft_tokens_total"] == by_arm["draft"]["drafted"]  # /metrics agrees
    assert sum(a["generated"] for a in extra["server_log_acceptance"]) == by_arm["draft"]["drafted"]
    assert draft["outputs_differ"] == 0  # greedy speculative decoding must not change the text
    assert draft["outputs_compared"] == 10 and draft["first_diff_char"] is None
    texts = db_rows(
        env, "SELECT count(*) AS n FROM requests WHERE length(output_text) = output_chars AND output_chars > 0"
    )
    assert texts[0]["n"] == 30  # each request's text is kept, so a difference could be located

    listed = json.loads(run_orch(orch_exe, "runs", "--json", env=env).stdout)
    assert {r["arm"] for r in listed if r["mode"] == "server" and r["acceptance"]} >= {"draft"}
    assert all(r["decode_tps"] > 0 for r in listed)


def test_server_reused_while_arguments_match_and_concurrency(orch_exe, env, tmp_path):
    recipe = tmp_path / "reuse.j2"
    recipe.write_text(
        '{% set meta = {"mode": "server", "arms": {"short": {"n_predict": 8}, "long": {"n_predict": 24}},'
        ' "baseline": "short"} %}\n{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -t 1\n'
    )
    assert orch_run(orch_exe, recipe, "--repeat", "2", env=env).returncode == 0
    logs = db_rows(env, "SELECT run_id, gz FROM run_logs WHERE stream = 'stderr' ORDER BY run_id")
    import gzip

    starts = [b"model loaded" in gzip.decompress(r["gz"]) for r in logs]
    assert starts == [True, False, False, False]  # one server start for all four runs

    res = orch_run(
        orch_exe, SERVER_SPEC, "--vars", TINY_VARS, "--set", "n_predict=16", "--set", "concurrency=3", env=env
    )
    assert res.returncode == 0, res.stderr
    rows = db_rows(
        env,
        "SELECT r.executed_argv, m.extra, (SELECT count(DISTINCT client) FROM requests q "
        "WHERE q.run_id = r.id) AS clients FROM runs r JOIN metrics m ON m.run_id = r.id "
        "WHERE r.sweep_id = 2",
    )
    for row in rows:
        assert "--parallel" in json.loads(row["executed_argv"]) and row["clients"] == 3
        assert json.loads(row["extra"])["aggregate_tps"] > 0


def test_silent_fallback_is_detected_without_dialect_translation(orch_exe, env, tmp_path):
    recipe = tmp_path / "fallback.j2"
    recipe.write_text(
        '{% set meta = {"mode": "server", "arms": {"draft": {}}} %}\n'
        "{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -md {{ models }}/tiny-draft.gguf -t 1\n"
    )
    res = orch_run(orch_exe, recipe, "--no-dialect", "--set", "n_predict=8", env=env)
    assert res.returncode == 15 and "speculation not engaged" in res.stderr
    assert db_rows(env, "SELECT status, failure_class FROM runs") == [
        {"status": "failed", "failure_class": "spec_not_engaged"}
    ]
    # The failed run keeps the server's whole log, start-up included.
    streams = db_rows(env, "SELECT stream, size_bytes FROM run_logs WHERE run_id = 1 ORDER BY stream")
    assert "stderr" in {r["stream"] for r in streams} and max(r["size_bytes"] for r in streams) > 1000
    # The same recipe with the dialect layer on gets --spec-type draft-simple and drafts.
    assert orch_run(orch_exe, recipe, "--set", "n_predict=8", env=env).returncode == 0


def test_taken_port_is_retried_on_another(real_build, tiny_dir, tmp_path):
    from orchestrator.run.server import Server

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1], None])

        def chooser():
            port = next(ports)
            if port is None:
                from orchestrator.run.server import free_port

                return free_port()
            return port

        server = Server(
            argv=[f"{real_build.bin_dir}/llama-server", "-m", str(tiny_dir / "tiny-target.gguf"), "-t", "1"],
            log_dir=tmp_path,
            start_timeout=60,
        )
        try:
            server.start(port_chooser=chooser)
            assert server.starts == 2 and server.port != taken.getsockname()[1] and server.alive()
        finally:
            server.stop()
    assert not server.alive()


def test_server_that_never_becomes_healthy_times_out_cleanly(orch_exe, env, tmp_path):
    script = tmp_path / "mute_server.py"
    script.write_text("import time\ntime.sleep(600)\n")
    recipe = tmp_path / "mute.j2"
    recipe.write_text(f'{{% set meta = {{"mode": "server", "arms": {{"mute": {{}}}}}} %}}\n{sys.executable} {script}\n')
    start = time.monotonic()
    res = orch_run(orch_exe, recipe, "--set", "server_timeout=3", env=env)
    assert res.returncode == 15 and "not healthy within 3s" in res.stderr
    assert time.monotonic() - start < 60
    assert db_rows(env, "SELECT status, failure_class FROM runs") == [{"status": "timeout", "failure_class": "timeout"}]
    # nothing of it left (found by its command line: on a busy machine it may be killed before it could say its pid)
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(script) in " ".join(p.info["cmdline"] or [])]


def test_orch_killed_with_sigkill_leaves_no_llama_server(orch_exe, env):
    proc = subprocess.Popen(
        [
            orch_exe,
            "run",
            str(SERVER_SPEC),
            "--build",
            COMMIT,
            "--vars",
            TINY_VARS,
            "--set",
            "n_predict=4000",
            "--set",
            "ignore_eos=true",
            "--repeat",
            "3",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    servers = []
    while not servers and time.monotonic() < deadline:
        servers = [c for c in psutil.Process(proc.pid).children(recursive=True) if "llama-server" in c.name()]
        time.sleep(0.2)
    assert servers, "orch never started llama-server"
    time.sleep(1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(servers, timeout=10)
    assert alive == [], f"llama-server outlived orch: {[p.pid for p in alive]}"
    assert not llama_servers_under(CACHE / "builds", Path(env["ORCH_DB"]).parent)  # this test's, not another's


def test_reparse_keeps_server_metrics(orch_exe, env):
    assert orch_run(orch_exe, SERVER_SPEC, "--vars", TINY_VARS, "--set", "n_predict=24", env=env).returncode == 0
    sql = (
        "SELECT run_id, n_drafted, n_accepted, acceptance, decode_tps, encode_tps, outputs_differ, "
        "extra->>'server_log_acceptance' AS log_acc FROM metrics ORDER BY run_id"
    )
    before = db_rows(env, sql)
    assert_reparse_changes_nothing(orch_exe, env)
    assert db_rows(env, sql) == before


def test_server_run_past_its_timeout_is_stored_as_timeout(orch_exe, env, tmp_path):
    recipe = tmp_path / "endless.j2"
    recipe.write_text(
        '{% set meta = {"mode": "server", "arms": {"endless": {}}} %}\n'
        "{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -c 32768 -t 1\n"
    )
    start = time.monotonic()
    res = orch_run(orch_exe, recipe, "--set", "n_predict=100000", "--set", "ignore_eos=true", "--timeout", "2", env=env)
    assert res.returncode == 15 and time.monotonic() - start < 60
    assert db_rows(env, "SELECT status, failure_class FROM runs") == [{"status": "timeout", "failure_class": "timeout"}]
