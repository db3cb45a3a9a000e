"""Kill trials: SIGKILL, SIGTERM, SIGHUP and a double Ctrl-C at random points of real CLI and server sweeps.

Each trial starts `orch run` on the tiny models, waits until a random number of runs has ended (and a random
fraction of a second more, so the signal lands anywhere: in a run, between runs, in a write), sends the
signal(s), and then checks what a user relies on:
  - orch's children are gone (no llama.cpp process outlives it);
  - a caught signal exits with its code (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP) and no traceback;
  - after the next command (a read: `orch runs`), no run or sweep is `running`, no run is `failed` by the
    kill, the sweep is `interrupted`, and its work directory is gone;
  - `--resume` finishes the sweep with exactly one measured ok run per arm and repeat.
It prints one line per trial and a table of counts. The integration tests run a few of these; this runs many.

    make build    # the build in ./builds; tiny models made in ./models if missing ($ORCH_BUILDS_DIR, $ORCH_MODELS)
    .venv/bin/python benchmarks/reliability.py --trials 10 [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import psutil

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)

SWEEPS = {  # mode -> (recipe, extra args, measured runs per complete sweep)
    "cli": (
        ROOT / "recipes" / "recipe_a.j2",
        ["--vars", str(ROOT / "recipes" / "tiny.toml"), "--repeat", "3", "--set", "n_predict=32"],
        9,
    ),
    "server": (
        ROOT / "recipes" / "server_spec.j2",
        ["--vars", str(ROOT / "recipes" / "tiny.toml"), "--repeat", "2", "--set", "n_predict=24"],
        6,
    ),
}
KINDS = ("SIGKILL", "SIGTERM", "SIGHUP", "double-SIGINT")


@dataclass
class Trial:
    kind: str
    mode: str
    after_runs: int
    problems: list[str] = field(default_factory=list)
    exit_code: int | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def rows(db: Path, sql: str) -> list[tuple]:
    """A plain read-only DuckDB client, retried while a writer holds the file (as any client must)."""
    for _ in range(200):
        try:
            con = duckdb.connect(str(db), read_only=True)
        except duckdb.IOException as exc:
            if "Could not set lock" not in str(exc):
                raise
            time.sleep(0.05)
            continue
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()
    raise RuntimeError(f"{db} stayed locked")


def ended_runs(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return rows(db, "SELECT count(*) FROM runs WHERE status <> 'running'")[0][0]
    except duckdb.CatalogException:  # created, not yet migrated
        return 0


def started_runs(db: Path, cache: Path) -> int:
    """Runs started so far: those stored, and those whose folder is in the sweep's work directory (in flight, or
    ended and waiting for the write that stores a few together: run/pending.py)."""
    return ended_runs(db) + len(list((cache / "work").glob("sweep-*/run-*")))


ENDED_EARLY = "sweep ended before the signal"


def trial(orch: str, build: str, kind: str, mode: str, rng: random.Random, env: dict, cache: Path) -> Trial:
    """One kill and its checks. cache: ORCH_CACHE for orch (shared by trials: the bandwidth is measured once);
    its work/ directory must be empty after every trial. A sweep that ended before the signal is no trial (fast
    runs finish the last ones within the random wait): it is tried again earlier in the sweep, with no wait."""
    after, wait_s = rng.randint(0, SWEEPS[mode][2] - 2), 0.6
    for _ in range(3):
        result = _attempt(orch, build, kind, mode, after, rng.uniform(0, wait_s), env, cache)
        if not (result.problems and result.problems[0].startswith(ENDED_EARLY)):
            return result
        after, wait_s = after // 2, 0.0
    return result


def _attempt(orch: str, build: str, kind: str, mode: str, after: int, wait_s: float, env: dict, cache: Path) -> Trial:
    recipe, extra, total = SWEEPS[mode]
    rng = random.Random(after)  # the second signal's delay (double-SIGINT)
    result = Trial(kind, mode, after)
    with tempfile.TemporaryDirectory(prefix="orch-kill-") as tmp:
        db = Path(tmp) / "r.duckdb"
        run_env = {**env, "ORCH_DB": str(db), "ORCH_CACHE": str(cache)}
        argv = [orch, "run", str(recipe), "--build", build, *extra]
        with open(Path(tmp) / "stderr", "w+") as err:
            # As a terminal starts it, whatever started this script (nohup hands SIGHUP ignored, and orch keeps
            # an ignored signal ignored).
            child = subprocess.Popen(
                argv, env=run_env, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=_default_signals
            )
            deadline = time.monotonic() + 300
            while started_runs(db, cache) <= after and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(wait_s)
            if child.poll() is not None:
                result.problems.append(f"{ENDED_EARLY} (exit {child.returncode})")
                return result
            descendants = _descendants(child.pid)
            if kind == "double-SIGINT":
                child.send_signal(signal.SIGINT)
                time.sleep(rng.uniform(0.0, 0.3))
                child.send_signal(signal.SIGINT)
            else:
                child.send_signal(getattr(signal, kind))
            try:
                result.exit_code = child.wait(timeout=120)
            except subprocess.TimeoutExpired:
                child.kill()
                result.problems.append("orch did not stop within 120 s of the signal")
                return result
            err.seek(0)
            stderr = err.read()
            if result.exit_code == 0:  # the signal came once orch had decided its status: ignored, as it should be
                result.problems.append(f"{ENDED_EARLY} (exit 0: the signal came after the sweep's end)")
                return result
        stop_code = 128 + getattr(signal, kind.removeprefix("double-"))  # 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
        expected = {-signal.SIGKILL} if kind == "SIGKILL" else {stop_code}
        if not db.exists() and kind != "SIGKILL":  # it may have landed while Python was still starting orch
            expected.add(-getattr(signal, kind.removeprefix("double-")))
        # A Ctrl-C while the interpreter itself starts (site, the standard library, orch's modules loading: before
        # orch's main runs and can hold it) ends it with Python's own traceback; nothing exists yet to store or leave.
        in_python_start = (
            kind == "double-SIGINT"
            and not db.exists()
            and result.exit_code in (1, -signal.SIGINT)
            and stderr.rstrip().endswith("KeyboardInterrupt")
            and not re.search(r'File "[^"]*/orchestrator/[^"]+", line \d+, in (?!<module>)', stderr)
        )
        if in_python_start:
            result.note = "landed while Python started (its own traceback, nothing of orch ran)"
        elif result.exit_code not in expected:
            result.problems.append(f"exit {result.exit_code}, expected {expected}")
        if "Traceback" in stderr and not in_python_start:
            result.problems.append("a traceback: " + stderr[stderr.index("Traceback") :][-3000:])
        left = _alive(descendants, wait_s=10)
        if left:
            result.problems.append(f"processes outlived orch: {left}")
            for p in left:
                p.kill()
        work = cache / "work"
        if not db.exists():  # killed before its first write: nothing stored, so nothing may be left either
            if work.exists() and any(work.iterdir()):
                result.problems.append(f"work directories left: {[p.name for p in work.iterdir()]}")
            result.note = result.note or "stopped before its first write"
            return result
        # The next command, a read, finds what a dead orch left and marks it.
        after_cmd = subprocess.run([orch, "runs", "--last", "3"], env=run_env, capture_output=True, text=True)
        if after_cmd.returncode:
            result.problems.append(f"`orch runs` after the kill failed: {after_cmd.stderr.strip()}")
        if not rows(db, "SELECT count(*) FROM sweeps")[0][0]:  # killed after making the file, before the sweep row
            if work.exists() and any(work.iterdir()):  # its work directory, which no row names, is gone too
                result.problems.append(f"work directories left: {[p.name for p in work.iterdir()]}")
            result.note = "stopped before the sweep was stored"
            return result
        running = rows(
            db,
            "SELECT (SELECT count(*) FROM runs WHERE status = 'running') + "
            "(SELECT count(*) FROM sweeps WHERE status = 'running')",
        )[0][0]
        if running:
            result.problems.append(f"{running} rows still running after the next open")
        failed = rows(
            db, "SELECT count(*) FROM runs WHERE status = 'failed' AND failure_class IS DISTINCT FROM 'truncated_log'"
        )[0][0]  # the binary's (below)
        if failed:
            classes = rows(db, "SELECT id, failure_class, failure_detail FROM runs WHERE status = 'failed'")
            result.problems.append(f"{failed} runs stored failed by the kill: {classes}")
        status = rows(db, "SELECT status FROM sweeps")
        if status == [("done",)] and result.exit_code == stop_code:  # it landed after the last run: nothing to resume
            result.note = "landed after the last run"
            return result
        if status != [("interrupted",)]:
            result.problems.append(f"sweep status {status}, expected interrupted")
        if work.exists() and any(work.iterdir()):
            result.problems.append(f"work directories left: {[p.name for p in work.iterdir()]}")
        resumed = subprocess.run([*argv, "--resume"], env=run_env, capture_output=True, text=True, timeout=600)
        # 15 with only truncated_log runs: llama.cpp under load now and then exits 0 before its last log lines are
        # written (README, failure classes); that is the binary's, not the kill's, and the run is still stored.
        truncated = rows(db, "SELECT count(*) FROM runs WHERE failure_class = 'truncated_log'")[0][0]
        if resumed.returncode and not (resumed.returncode == 15 and truncated):
            result.problems.append(f"--resume exit {resumed.returncode}: {resumed.stderr.strip()[-300:]}")
        if truncated:
            result.note = f"{truncated} run(s) lost their last log lines (truncated_log)"
        # planned slots only: a reference run again at an arm's count of tokens (params.length_of) is no slot
        cells = rows(
            db,
            "SELECT count(*), count(DISTINCT (arm, repeat_index)) FROM measured_runs "
            "WHERE (status = 'ok' OR failure_class = 'truncated_log') "
            "AND params->>'length_of' IS NULL",
        )
        if cells[0] != (total, total):
            result.problems.append(
                f"after --resume {cells[0][0]} measured ok runs in {cells[0][1]} cells, expected {total}"
            )
    return result


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(processes: list[psutil.Process], wait_s: float) -> list[psutil.Process]:
    deadline = time.monotonic() + wait_s
    while True:
        left = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="trials per signal kind and mode")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--modes", default="cli,server")
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--orch", default=str(Path(sys.executable).parent / "orch"))
    parser.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    args = parser.parse_args()
    args.build = _where.project(args.build)
    if args.quick:
        args.trials, args.kinds, args.modes = 1, "SIGTERM", "cli"
    rng = random.Random(args.seed)
    counts: dict[tuple[str, str], list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="orch-kill-cache-") as cache_dir:  # gone after the trials
        cache = Path(cache_dir)
        for mode in args.modes.split(","):
            for kind in args.kinds.split(","):
                for i in range(args.trials):
                    try:
                        t = trial(args.orch, args.build, kind, mode, rng, dict(os.environ), cache)
                    except Exception as exc:  # noqa: BLE001  (a trial that breaks the checker is a failed trial)
                        t = Trial(kind, mode, -1, [f"{type(exc).__name__}: {exc}"])
                    counts.setdefault((kind, mode), [0, 0])[0 if t.ok else 1] += 1
                    print(
                        f"{mode:>6} {kind:>13} #{i + 1}: after {t.after_runs} runs, exit {t.exit_code}: "
                        f"{('ok' + (f' ({t.note})' if t.note else '')) if t.ok else '; '.join(t.problems)}",
                        flush=True,
                    )
    print("\n| signal | sweep | trials | every check passed |\n|---|---|---|---|")
    for (kind, mode), (good, bad) in counts.items():
        print(f"| {kind} | {mode} | {good + bad} | {good} |")


if __name__ == "__main__":
    main()
