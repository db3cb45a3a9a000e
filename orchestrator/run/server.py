"""llama-server lifecycle: a free port on 127.0.0.1, readiness, speculation check, metrics, shutdown.

The server runs in its own process group and dies with orch (parent-death signal), so no llama-server
outlives orch, not even when orch is killed with SIGKILL.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from orchestrator import proc
from orchestrator.errors import ServerFailed
from orchestrator.parse.failure import Ended
from orchestrator.parse.server import parse_prometheus
from orchestrator.parse.server_failure import start_failure

HOST = "127.0.0.1"
STOP_GRACE_S = 10.0
PORT_ATTEMPTS = 3
BIND_FAILURE = re.compile(r"couldn't bind|could not bind|address already in use|failed to bind", re.I)
# The server's log files live in a temporary directory that goes with the server: messages point at the copy
# stored with the run instead.
LOG_STORED = "the server's whole log is stored with the run: `orch show RUN`"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def server_argv(argv: list[str], port: int, help_flags: set[str]) -> list[str]:
    """The recipe's argv plus where to listen (and --metrics where the build has it)."""
    extra = ["--host", HOST, "--port", str(port)]
    if "--metrics" in help_flags and "--metrics" not in argv:
        extra.append("--metrics")
    return [*argv, *extra]


@dataclass
class Server:
    argv: list[str]  # without host and port
    log_dir: Path
    help_flags: set[str] = field(default_factory=set)
    start_timeout: float = 120.0
    port: int = 0
    command: list[str] = field(default_factory=list)  # argv as launched, host and port included
    child: object = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def stdout_path(self) -> Path:
        return self.log_dir / "server.stdout"

    @property
    def stderr_path(self) -> Path:
        return self.log_dir / "server.stderr"

    def start(self, port_chooser=free_port) -> None:
        """Start and wait for /health 200; a port taken meanwhile is retried on another one."""
        for attempt in range(PORT_ATTEMPTS):
            self.port = port_chooser()
            self.command = server_argv(self.argv, self.port, self.help_flags)
            self.child = proc.spawn(self.command, stdout_path=self.stdout_path, stderr_path=self.stderr_path)
            self.starts += 1
            try:
                self._wait_healthy()
                return
            except ServerFailed as exc:
                self.stop()
                if exc.failure_class != "port_taken" or attempt == PORT_ATTEMPTS - 1:
                    raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            code = self.child.poll()
            if code is not None:
                self._exited(code)
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass  # not listening yet; 503 means the model is loading
            time.sleep(0.1)
        raise ServerFailed(
            f"llama-server not healthy within {self.start_timeout:.0f}s on {self.url}; raise it with "
            f"--set server_timeout=SECONDS; {LOG_STORED}",
            "timeout",
            self.log_tail(),
        )

    def _exited(self, code: int) -> None:
        tail = self.log_tail()
        if BIND_FAILURE.search(tail):
            raise ServerFailed(f"port {self.port} was taken", "port_taken", tail)
        ended = Ended(returncode=code if code >= 0 else None, signal=-code if code < 0 else None)
        failure = start_failure(tail, ended).name  # the rules `orch parse` reads a saved server log by
        last = [ln for ln in tail.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise ServerFailed(
            f"llama-server exited with status {code} before becoming healthy ({failure}): "
            f"{last[0].strip()[:200]}; {LOG_STORED}",
            failure,
            tail,
        )

    def mark_log(self, line: str) -> None:
        """Append one line of orch's own to the server's log (stderr, where it logs): a mark its readers find."""
        with open(self.stderr_path, "a") as f:  # append mode: the server's own lines are never overwritten
            f.write(line + "\n")

    def log_tail(self, n_bytes: int = 20000) -> str:
        text = ""
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                with open(path, "rb") as f:
                    f.seek(max(0, path.stat().st_size - n_bytes))
                    text += f.read().decode(errors="replace")
        return text

    def speculative_slots(self) -> bool | None:
        """Whether /slots reports speculation active on any slot; None when the build has no such field."""
        try:
            res = requests.get(f"{self.url}/slots", timeout=10)
            slots = res.json() if res.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        if not isinstance(slots, list) or not slots or "speculative" not in slots[0]:
            return None
        return any(s.get("speculative") for s in slots)

    def metrics(self) -> dict[str, float]:
        """Prometheus counters from /metrics (empty without --metrics); per-position series keep their label."""
        try:
            res = requests.get(f"{self.url}/metrics", timeout=10)
        except requests.RequestException:
            return {}
        return parse_prometheus(res.text) if res.status_code == 200 else {}

    def alive(self) -> bool:
        return self.child is not None and self.child.poll() is None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period, for the whole process group."""
        if self.child is not None:
            proc.kill_tree(self.child, grace=STOP_GRACE_S)
            self.child = None
