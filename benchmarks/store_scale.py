"""How `orch summary` and `orch compare` scale: a real results database grown to N stored runs by copying its sweeps.

Copies the seed's sweeps (runs, metrics, requests, telemetry) with fresh ids until the runs table holds --runs
rows (the last copy only some sweeps); every second copy is relabelled as another build ("<name>+head") so
compare has two builds with the same tests. Then it runs the real commands and prints each one's wall time, CPU
time (user + sys) and peak RSS (os.wait4 of that process): `orch summary` over every sweep with nothing kept
(every summary computed from its runs, as after an upgrade), `orch repair` (which keeps them, as each sweep's
end does), then `orch summary` over every sweep in each format, of the newest sweep, and `orch compare` of the
two builds. A benchmark: it prints figures.
--orch times another orch executable on the same grown file (an older checkout's, for before/after).

    make demo   # any results.duckdb with real sweeps will do
    .venv/bin/python benchmarks/store_scale.py --seed results.duckdb --runs 100000 [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import duckdb


def grow(db: Path, target_runs: int) -> tuple[int, int, str]:
    """Copies of the seed's sweeps (the last copy only some of them) until the file holds target_runs runs; at least
    one copy, the "+head" build `orch compare` is timed against, whatever the seed's size."""
    con = duckdb.connect(str(db))
    build = con.execute("SELECT build_name FROM sweeps ORDER BY id LIMIT 1").fetchone()[0]
    seed = con.execute(
        "SELECT s.id, count(r.id) FROM sweeps s LEFT JOIN runs r ON r.sweep_id = s.id GROUP BY s.id ORDER BY s.id"
    ).fetchall()
    copy = 0
    while (runs := con.execute("SELECT count(*) FROM runs").fetchone()[0]) < target_runs or not copy:
        copy += 1
        picked, more = [], runs
        for sweep_id, n in seed:  # the whole seed, or its first sweeps up to the target (one at least)
            if more >= target_runs and picked:
                break
            picked.append(sweep_id)
            more += n
        sweep_off = con.execute("SELECT max(id) FROM sweeps").fetchone()[0]
        run_off = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        label = f"{build}+head" if copy % 2 else build
        con.execute("BEGIN")
        con.execute("CREATE TEMP TABLE s AS SELECT * FROM sweeps WHERE list_contains(?, id)", [picked])
        con.execute(
            "UPDATE s SET id = id + ?, uid = md5(uid || ?), "
            "build_name = CASE WHEN build_name = ? THEN ? ELSE build_name END",
            [sweep_off, f"/copy{copy}", build, label],
        )
        con.execute("INSERT INTO sweeps SELECT * FROM s")
        con.execute("CREATE TEMP TABLE picked_runs AS SELECT id FROM runs WHERE list_contains(?, sweep_id)", [picked])
        for table, key in (("runs", "id"), ("metrics", "run_id"), ("requests", "run_id"), ("telemetry", "run_id")):
            con.execute(f"CREATE TEMP TABLE t AS SELECT * FROM {table} WHERE {key} IN (SELECT id FROM picked_runs)")
            extra = ", sweep_id = sweep_id + ?" if table == "runs" else ""
            con.execute(f"UPDATE t SET {key} = {key} + ?{extra}", [run_off, sweep_off] if extra else [run_off])
            if table != "metrics":  # a copy is another row everywhere (orch export/import match rows by uid)
                con.execute("UPDATE t SET uid = md5(uid || ?)", [f"/copy{copy}"])
            con.execute(f"INSERT INTO {table} SELECT * FROM t")
            con.execute("DROP TABLE t")
        con.execute("DROP TABLE s")
        con.execute("DROP TABLE picked_runs")
        con.execute("COMMIT")
    sweeps = con.execute("SELECT count(*) FROM sweeps").fetchone()[0]
    # The relabelled build must exist for `orch compare --head` to resolve it, and its sweeps' runs name it (a run
    # is counted under its own build, since one sweep may cross several).
    con.execute(
        "UPDATE runs SET build_id = build_id || '+head' WHERE sweep_id IN (SELECT id FROM sweeps WHERE build_name = ?)",
        [f"{build}+head"],
    )
    con.execute("CREATE TEMP TABLE b AS SELECT * FROM builds WHERE name = ?", [build])
    con.execute("UPDATE b SET id = id || '+head', name = name || '+head'")
    con.execute("INSERT INTO builds SELECT * FROM b")
    con.close()
    return runs, sweeps, build


def measure(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds: user + sys, DuckDB's threads included) of one command, which must
    succeed. On a shared machine the wall time waits for other work; the CPU time much less."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: 8,192 verdict lines would fill a pipe and stall it
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            sys.exit(f"{' '.join(argv)} failed: {err.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=Path, default=Path("results.duckdb"), help="a results database with sweeps")
    parser.add_argument("--runs", type=int, default=100_000, help="grow the runs table to this many rows")
    parser.add_argument("--repeat", type=int, default=3, help="timings per command")
    parser.add_argument("--orch", default=str(Path(sys.executable).parent / "orch"), help="orch executable to time")
    parser.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.repeat = 300, 1
    if not args.seed.exists():
        sys.exit(f"no seed database {args.seed}: run `make demo` (or any orch run) first, or pass --seed")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "grown.duckdb"
        shutil.copy(args.seed, db)
        from orchestrator import store

        store.connect(db).close()  # migrate the copy first
        start = time.perf_counter()
        # Grown in a child: a child inherits its parent's peak RSS, so the timed commands start from a small one.
        with ProcessPoolExecutor(max_workers=1) as pool:
            runs, sweeps, build = pool.submit(grow, db, args.runs).result()
        print(
            f"grew {args.seed} to {runs} runs in {sweeps} sweeps ({time.perf_counter() - start:.0f}s, "
            f"{db.stat().st_size >> 20} MiB)"
        )
        every = ["--last", str(sweeps), "--db", str(db)]
        # Nothing kept yet (a file from an older orch, or runs changed since): every sweep computed from its runs
        _report("summary, computed", [measure([args.orch, "summary", *every, "--format", "json"])])
        start = time.perf_counter()
        measure([args.orch, "repair", "--db", str(db)])  # keeps each sweep's summary, as each sweep's end does
        print(
            f"orch repair kept every sweep's summary in {time.perf_counter() - start:.1f}s "
            f"({db.stat().st_size >> 20} MiB)"
        )
        commands = {
            "summary": [args.orch, "summary", *every, "--format", "json"],
            "summary-table": [args.orch, "summary", *every],
            "summary-md": [args.orch, "summary", *every, "--format", "md"],
            "summary-wide": [args.orch, "summary", *every, "--wide"],
            "summary-csv": [args.orch, "summary", *every, "--format", "csv"],  # computed: every raw value
            "summary-1": [args.orch, "summary", "--db", str(db)],  # the newest sweep: the everyday call
            "compare": [
                args.orch,
                "compare",
                "--base",
                build,
                "--head",
                f"{build}+head",
                "--format",
                "json",
                "--db",
                str(db),
            ],
            "startup": [args.orch, "--version"],
        }  # interpreter and imports alone, for scale
        for what, argv in commands.items():
            _report(what, [measure(argv) for _ in range(args.repeat)])


def _report(what: str, results: list[tuple[float, float, float]]) -> None:
    secs, cpu = sorted(r[0] for r in results), sorted(r[2] for r in results)
    print(
        f"{what:>17}: {secs[0]:.2f}s best, {secs[len(secs) // 2]:.2f}s median of {len(secs)}, "
        f"CPU {cpu[0]:.2f}s best, {cpu[len(cpu) // 2]:.2f}s median, peak RSS {max(r[1] for r in results):.0f} MiB"
    )


if __name__ == "__main__":
    main()
