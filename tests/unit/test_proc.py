"""proc.run with real processes: timeouts and Ctrl-C must leave nothing running."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from orchestrator import proc
from orchestrator.errors import MissingTool

pytestmark = pytest.mark.integration  # every test here starts real processes

# Spawns a grandchild that would outlive a careless kill, prints its pid, then hangs. A shell, not Python: it starts
# in milliseconds, so even a busy machine prints the pid well before the 2 s timeout.
HANGER = "sleep 300 &\necho $!\nexec sleep 300\n"


def alive(pid, wait_s=5.0):
    """Whether pid still runs after up to wait_s (a SIGKILLed process takes a moment to go)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            running = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            running = False
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def test_exit_status_and_capture():
    res = proc.run(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], capture=True
    )
    assert (res.returncode, res.signal, res.timed_out) == (3, None, False)
    assert res.stdout.strip() == "out" and res.stderr.strip() == "err" and not res.ok


def test_signal_is_reported():
    res = proc.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGABRT)"])
    assert res.returncode is None and res.signal == signal.SIGABRT
    assert res.describe() == "killed by SIGABRT"


def test_log_gets_stdout_and_stderr(tmp_path):
    log = tmp_path / "x.log"
    proc.run([sys.executable, "-c", "import sys; print('a'); print('b', file=sys.stderr)"], log=log)
    assert sorted(log.read_text().split()) == ["a", "b"]


def test_timeout_kills_the_whole_tree(tmp_path):
    log = tmp_path / "hang.log"
    res = proc.run(["sh", "-c", HANGER], log=log, timeout=2)
    assert res.timed_out and not res.ok and "timed out" in res.describe()
    grandchild = int(log.read_text().split()[0])
    assert not alive(grandchild)


def test_missing_program_is_a_clear_error():
    with pytest.raises(MissingTool, match="no-such-program-xyz is not installed"):
        proc.run(["no-such-program-xyz"])


def test_ctrl_c_kills_the_child_group(tmp_path):
    """SIGINT to a Python process inside proc.run: the child tree dies and KeyboardInterrupt propagates."""
    log = tmp_path / "hang.log"
    driver = textwrap.dedent(f"""
        import sys
        from orchestrator import proc
        try:
            proc.run(["sh", "-c", {HANGER!r}], log={str(log)!r})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
    """)
    outer = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (log.exists() and log.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    grandchild = int(log.read_text().split()[0])
    os.kill(outer.pid, signal.SIGINT)
    out, _ = outer.communicate(timeout=20)
    assert outer.returncode == 130 and "interrupted" in out
    assert not alive(grandchild)


def test_peak_rss_and_cpu_time_come_from_the_kernel_at_exit(tmp_path):
    script = "b = bytearray(120 << 20)\nimport time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    res = proc.run([sys.executable, "-c", script], stdout_path=tmp_path / "o", stderr_path=tmp_path / "e", timeout=30)
    assert res.ok and res.peak_rss_bytes >= 120 << 20 and res.cpu_s >= 0.3
    failed = proc.run([sys.executable, "-c", "import sys; sys.exit(3)"], stdout_path=tmp_path / "o", timeout=30)
    assert (failed.returncode, failed.signal) == (3, None)
    killed = proc.run(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
        stdout_path=tmp_path / "o",
        timeout=30,
    )
    assert (killed.returncode, killed.signal) == (None, signal.SIGTERM)
