"""A llama-server that hangs (never ready, or stops answering mid-stream, or is SIGSTOPped) is stored as a
timeout, its log kept in the database, and orch's messages name no file that is gone."""

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from integration.conftest import COMMIT, db_rows, orch_run, run_orch

HUNG_SERVER = Path(__file__).with_name("hung_server.py")


def hung_recipe(tmp_path, mode):
    recipe = tmp_path / f"{mode}.j2"
    recipe.write_text(
        f'{{% set meta = {{"mode": "server", "arms": {{"hung": {{}}}}}} %}}\n{sys.executable} {HUNG_SERVER} {mode}\n'
    )
    return recipe


def assert_named_files_exist(text):
    """Every absolute path a message names must still be there for the user to open."""
    for path in re.findall(r"(?<![\w.])(/[\w.+-]+(?:/[\w.+-]+)+)", text):
        assert Path(path).exists(), f"message names {path}, which does not exist: {text}"


# 10 s and 30 s for the stand-in to start (a busy machine's Python) and say it listens; the stalled stream still ends
# at 3 (stall answers /health at once), and so does the trickling one, whose bytes never bring a line
@pytest.mark.parametrize(
    "mode, health_s, phase",
    [
        ("accept", 10, "not healthy within 10s"),
        ("stall", 30, "warm-up request failed"),
        ("trickle", 30, "warm-up request failed"),
    ],
)
def test_a_hung_server_is_stored_as_a_timeout_with_its_log(orch_exe, env, tmp_path, mode, health_s, phase):
    start = time.monotonic()
    res = orch_run(
        orch_exe, hung_recipe(tmp_path, mode), "--set", f"server_timeout={health_s}", "--timeout", "3", env=env
    )
    assert res.returncode == 15 and phase in res.stderr, res.stderr
    assert time.monotonic() - start < 60
    rows = db_rows(env, "SELECT id, status, failure_class, failure_detail FROM runs")
    assert [(r["status"], r["failure_class"]) for r in rows] == [("timeout", "timeout")]
    assert_named_files_exist(res.stdout + res.stderr + rows[0]["failure_detail"])
    shown = run_orch(orch_exe, "show", str(rows[0]["id"]), env=env)
    assert f"hung_server {mode} listening" in shown.stdout  # the server's log, stored before its directory went
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(HUNG_SERVER) in " ".join(p.info["cmdline"] or [])]


def test_a_stopped_llama_server_is_a_timeout_and_is_cleaned_up(orch_exe, env, tmp_path):
    recipe = tmp_path / "stopped.j2"
    recipe.write_text(
        '{% set meta = {"mode": "server", "arms": {"stopped": {}}} %}\n'
        "{{ bin }}/llama-server -m {{ models }}/tiny-target.gguf -c 4096 -t 1\n"
    )
    orch = subprocess.Popen(
        [
            orch_exe,
            "run",
            str(recipe),
            "--build",
            COMMIT,
            "--set",
            "n_predict=3000",
            "--set",
            "ignore_eos=true",
            "--set",
            "server_timeout=5",
            "--timeout",
            "5",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = None
    deadline = time.monotonic() + 60
    while server is None and time.monotonic() < deadline:
        server = next(
            (c for c in psutil.Process(orch.pid).children(recursive=True) if "llama-server" in c.name()), None
        )
        time.sleep(0.1)
    assert server, "orch never started llama-server"
    time.sleep(1.5)  # loaded and streaming the warm-up (or still starting: either way it must end as a timeout)
    server.send_signal(signal.SIGSTOP)
    start = time.monotonic()
    out, err = orch.communicate(timeout=120)
    assert orch.returncode == 15, err
    assert time.monotonic() - start < 30  # the 5 s limit, then the stopped server is terminated at once
    rows = db_rows(env, "SELECT status, failure_class, failure_detail FROM runs")
    assert [(r["status"], r["failure_class"]) for r in rows] == [("timeout", "timeout")], rows
    assert_named_files_exist(out + err + rows[0]["failure_detail"])
    assert not psutil.pid_exists(server.pid) or server.status() == psutil.STATUS_ZOMBIE


def test_stopping_a_stopped_server_takes_sigterm_without_waiting_out_the_grace(tmp_path):
    from orchestrator import proc

    child = proc.spawn(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdout_path=tmp_path / "out",
        stderr_path=tmp_path / "err",
    )
    time.sleep(0.5)
    child.send_signal(signal.SIGSTOP)
    start = time.monotonic()
    proc.kill_tree(child, grace=60)
    assert child.returncode == -signal.SIGTERM and time.monotonic() - start < 10
