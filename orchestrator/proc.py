"""The only place orch starts processes.

Every child gets its own process group (a new session), so a timeout, an error or Ctrl-C can kill the
child and everything it spawned, and a terminal's Ctrl-C reaches orch alone, which then cleans up.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from orchestrator.errors import MissingTool

KILL_GRACE_S = 3.0


@dataclass
class ProcResult:
    argv: list[str]
    returncode: int | None  # exit status; None when a signal ended the process
    signal: int | None
    timed_out: bool
    wall_s: float
    stdout: str = ""  # only with capture=True
    stderr: str = ""
    log_paths: list[Path] = field(default_factory=list)
    peak_rss_bytes: int | None = None  # the child's own peak RSS, from the kernel at exit (not with capture=True)
    cpu_s: float | None = None  # user + system CPU seconds of the child and the children it waited for

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f}s"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit status {self.returncode}"


def kill_tree(proc: subprocess.Popen, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM the child's process group and any descendant that left it, then SIGKILL what remains."""
    try:
        stray = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        stray = []
    for sig in (signal.SIGTERM, signal.SIGCONT):  # SIGCONT: a stopped (hung, SIGSTOPped) child acts on SIGTERM now
        _signal_group(proc.pid, sig)
        for p in stray:
            _signal_quietly(p, sig)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    for p in stray:
        _signal_quietly(p, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_quietly(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)
    except psutil.Error:
        pass


PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int):
    """preexec hook: the kernel SIGKILLs the child when orch dies, even by SIGKILL (Linux)."""

    def hook():
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # orch died before the hook ran
            os._exit(1)

    return hook


def spawn(
    argv: list[str],
    *,
    stdout_path: Path,
    stderr_path: Path,
    env: dict[str, str] | None = None,
    die_with_parent: bool = True,
) -> subprocess.Popen:
    """Start a long-lived child (a server) in its own process group, output to files. Stop it with kill_tree."""
    argv = [str(a) for a in argv]
    with open(stdout_path, "ab") as out, open(stderr_path, "ab") as err:
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()) if die_with_parent else None,
            )
        except FileNotFoundError:
            raise MissingTool(f"{argv[0]} is not installed or not on PATH; install it and retry") from None


def run(
    argv: list[str],
    *,
    log: Path | None = None,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    capture: bool = False,
    timeout: float | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    on_start=None,
) -> ProcResult:
    """Run argv to completion.

    `log` appends stdout and stderr to one file; `stdout_path`/`stderr_path` write them apart;
    `capture` returns them as text; `on_start(pid)` is called once the child exists (the telemetry sampler
    starts there). Without capture the child is reaped by os.wait4 in a helper thread: the parent sleeps until
    the kernel reports the exit (no polling loop beside a decoding child) and gets the exact peak RSS and CPU
    time with it.
    """
    argv = [str(a) for a in argv]
    files = []
    if capture:
        stdout, stderr = subprocess.PIPE, subprocess.PIPE
    elif log:
        stdout = open(log, "ab")
        stderr = subprocess.STDOUT
        files.append(stdout)
    elif stdout_path or stderr_path:
        stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
        stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        files += [f for f in (stdout, stderr) if f is not subprocess.DEVNULL]
    else:
        stdout, stderr = subprocess.DEVNULL, subprocess.DEVNULL
    start = time.monotonic()
    try:
        try:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
            )
        except FileNotFoundError:
            raise MissingTool(f"{argv[0]} is not installed or not on PATH; install it and retry") from None
        timed_out = False
        out = err = b""
        reaper = None if capture else _Reaper(child)
        try:
            if on_start:
                on_start(child.pid)
            if capture:
                out, err = child.communicate(timeout=timeout)
            elif not reaper.done.wait(timeout):
                raise subprocess.TimeoutExpired(argv, timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_tree(child)
        except BaseException:  # Ctrl-C or any error: leave nothing running
            kill_tree(child)
            raise
    finally:
        for f in files:
            f.close()
    code = child.returncode
    usage = reaper.usage if reaper else None
    return ProcResult(
        argv=argv,
        returncode=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        stdout=(out or b"").decode(errors="replace"),
        stderr=(err or b"").decode(errors="replace"),
        log_paths=[p for p in (log, stdout_path, stderr_path) if p],
        peak_rss_bytes=usage.ru_maxrss * 1024 if usage else None,  # Linux reports KiB
        cpu_s=usage.ru_utime + usage.ru_stime if usage else None,
    )


class _Reaper(threading.Thread):
    """Blocks in os.wait4 for one child and records its exit status and resource usage."""

    def __init__(self, child: subprocess.Popen):
        super().__init__(daemon=True, name=f"reap-{child.pid}")
        self.child = child
        self.usage = None
        self.done = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            _, status, self.usage = os.wait4(self.child.pid, 0)
            self.child.returncode = os.waitstatus_to_exitcode(status)  # Popen then never waits on it again
        except ChildProcessError:  # reaped by kill_tree's wait after a timeout or Ctrl-C
            pass
        self.done.set()


@dataclass(frozen=True)
class Owner:
    """A process as another process can recognise it later: host, pid, and the pid's start time (pids are reused)."""

    host: str
    pid: int
    started: float

    def alive(self) -> bool | None:
        """Whether this very process still runs; None when it ran on another host (it cannot be told from here)."""
        if self.host != socket.gethostname():
            return None
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 0.01
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return False
        except psutil.AccessDenied:
            return True


def this_process() -> Owner:
    return Owner(socket.gethostname(), os.getpid(), psutil.Process().create_time())


# a sweep's run logs, a Ray round's shard, an import's staging; a file or folder being downloaded (store/workdirs)
WORK_DIR_KINDS = ("sweep", "shard", "import", "part")
WORK_DIR = re.compile(r"(?P<kind>sweep|shard|import|part)-(?P<host>[^/]*)--(?P<pid>\d+)-(?P<started>\d+\.\d+)-")


def work_dir_prefix(owner: Owner, kind: str = "sweep") -> str:
    """The name a work directory starts with: its kind and owner, so that a directory left by an orch killed before
    any row named it can be told dead from alive (work_dir_owner) and removed by the next orch."""
    assert kind in WORK_DIR_KINDS, kind
    return f"{kind}-{_host_in_name(owner.host)}--{owner.pid}-{owner.started:.6f}-"


def work_dir_owner(name: str) -> Owner | None:
    """The owner a work directory's name carries (work_dir_prefix); None for names without one."""
    found = WORK_DIR.match(name)
    return Owner(found["host"], int(found["pid"]), float(found["started"])) if found else None


def same_owner(named: Owner, owner: Owner) -> bool:
    """Whether a directory's named owner (work_dir_owner) is this owner (its start time as the name rounds it)."""
    return (
        named.host == _host_in_name(owner.host) and named.pid == owner.pid and abs(named.started - owner.started) < 1e-5
    )


def _host_in_name(host: str) -> str:
    return host.replace("/", "_")
