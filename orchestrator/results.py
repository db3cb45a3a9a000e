"""A results file read from Python, with neither the CLI nor the schema: the library face under orch's read commands
(`orch sweeps`, `runs`, `show`, `summary`, `compare`), documented in docs/python.md.

    from orchestrator import results

    with results.open("results.duckdb") as found:
        for arm in found.summary(last=1):
            print(arm.arm, arm.speedup, arm.speedup_low, arm.speedup_high, arm.predicted)
        faster = found.sql("SELECT arm, avg(decode_tps) FROM runs JOIN metrics ON id = run_id GROUP BY arm")

The file is opened read-only and shared: a sweep may be writing to it meanwhile, and nothing here writes, creates
or migrates it (a file an older orch made is read as the CLI reads it). Each row is a frozen dataclass whose fields
are the figures a reader asks for first, and whose `values` holds every column, as `--json` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from orchestrator import config, store
from orchestrator.analyze import hosts, summaries
from orchestrator.analyze.compare_builds import Comparison, compare_builds
from orchestrator.build.in_results import resolve_stored_build
from orchestrator.errors import NoSuchRun, NoSuchSweep
from orchestrator.store import logs, queries, sweep_list


@dataclass(frozen=True)
class Sweep:
    """One stored sweep, as `orch sweeps` lists it."""

    sweep: int
    recipe: str
    builds: str
    workload: str | None
    mode: str
    runs: int
    ok: int
    status: str
    values: dict = field(repr=False)


@dataclass(frozen=True)
class Arm:
    """One arm of a sweep, as `orch summary` shows it: decode speed, and its speedup against `vs` (its control, the
    same program drafting nothing, else the baseline) paired by repeat, each with its 95% interval; the speedup
    predicted before it ran (None where none was: `prediction_missing` in values says why); its warnings."""

    sweep: int
    arm: str
    decode_tps: float | None
    decode_tps_low: float | None
    decode_tps_high: float | None
    acceptance: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    vs: str | None
    predicted: float | None
    predicted_low: float | None
    predicted_high: float | None
    warnings: tuple[str, ...]
    params: dict
    values: dict = field(repr=False)


@dataclass(frozen=True)
class Run:
    """One stored run, as `orch runs` lists it (every canonical metric in values)."""

    run_id: int
    sweep_id: int
    arm: str
    repeat_index: int
    warmup: bool
    status: str
    decode_tps: float | None
    acceptance: float | None
    values: dict = field(repr=False)


class Results:
    """A results file open for reading; `with results.open(path) as found:` closes it after."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else config.db_path()
        self.con = store.connect(self.path, read_only=True)

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def sweeps(self, last: int = 20) -> list[Sweep]:
        """The newest `last` sweeps, oldest first."""
        return [
            Sweep(r["sweep"], r["recipe"], r["builds"], r["workload"], r["mode"], r["runs"], r["ok"], r["status"], r)
            for r in sweep_list.sweeps(self.con, last)
        ]

    def sweep_ids(self, sweeps: tuple[int, ...] | list[int] = (), last: int = 1) -> list[int]:
        """The sweeps named (NoSuchSweep where one is not stored), else the newest `last`."""
        if missing := sorted(set(sweeps) - queries.existing_sweeps(self.con, list(sweeps))):
            raise NoSuchSweep(f"no sweep {', '.join(map(str, missing))}; list them with `orch sweeps`")
        return list(sweeps) or queries.last_sweeps(self.con, last)

    def summary_rows(self, *sweeps: int, last: int = 1) -> list[dict]:
        """summary's rows as dicts, every column (what `orch summary --format json` prints)."""
        return summaries.rows(self.con, self.sweep_ids(sweeps, last))

    def summary(self, *sweeps: int, last: int = 1) -> list[Arm]:
        """Every arm of the sweeps named (else of the newest `last`), computed from their runs now."""
        return [_arm(r) for r in self.summary_rows(*sweeps, last=last)]

    def runs(self, last: int = 20) -> list[Run]:
        """The newest `last` runs, oldest first."""
        return [
            Run(
                r["run_id"],
                r["sweep_id"],
                r["arm"],
                r["repeat_index"],
                bool(r["warmup"]),
                r["status"],
                r["decode_tps"],
                r["acceptance"],
                r,
            )
            for r in self.run_rows(last)
        ]

    def run_rows(self, last: int = 20) -> list[dict]:
        return queries.recent_runs(self.con, last)

    def run(
        self, run_id: int, *, with_logs: bool = False, decode_json: bool = True, log_tail: int | None = None
    ) -> dict:
        """One run whole: {"run": its row, "metrics": its metrics, "logs": stream -> text (with_logs; log_tail: each
        stream's last log_tail bytes), "log_sizes": stream -> bytes stored}; NoSuchRun where it is not stored."""
        row = queries.run_row(self.con, run_id, decode_json=decode_json)
        if not row:
            raise NoSuchRun(f"no run {run_id} in {self.path}; list runs with `orch runs`")
        return {
            "run": row,
            "metrics": queries.metrics_row(self.con, run_id, decode_json=decode_json),
            "logs": logs.read_logs(self.con, run_id, damaged_as_note=True, tail=log_tail) if with_logs else {},
            "log_sizes": logs.log_sizes(self.con, run_id) if with_logs else {},
        }

    def compare(
        self,
        base: str | None,
        head: str | None,
        *,
        recipe: str | None = None,
        threshold: float = 0.05,
        base_host: str | None = None,
        head_host: str | None = None,
    ) -> Comparison:
        """Head against base build (a build name, commit prefix or tag stored in the file), test by test, as
        `orch compare` judges them: a regression or improvement beyond `threshold` and statistically different.
        With a host (a hostname or host id), each side is that host's runs, and a build left out is the newest
        both hosts ran."""
        if base_host or head_host:
            base_host = hosts.resolve_host(self.con, base_host or head_host)
            head_host = hosts.resolve_host(self.con, head_host or base_host)
            base, head = hosts.build_for_hosts(self.con, base_host, head_host, base, head)
        return compare_builds(
            self.con,
            resolve_stored_build(self.con, base),
            resolve_stored_build(self.con, head),
            recipe=recipe,
            threshold=threshold,
            base_host=base_host,
            head_host=head_host,
        )

    def host_differences(self, comparison: Comparison) -> list[str]:
        """What differs between the two hosts a comparison's sides ran on (none: one host, or none named)."""
        if comparison.base_host == comparison.head_host:
            return []
        return hosts.differences(self.con, comparison.base_host, comparison.base, comparison.head_host, comparison.head)

    def sql(self, query: str, params: list | None = None) -> duckdb.DuckDBPyRelation:
        """Any read-only SQL over the file's tables and views, as a DuckDB relation (.df(), .fetchall(), .pl())."""
        return self.con.sql(query, params=params)


def open(path: Path | str | None = None) -> Results:  # results.open, as gzip.open and tarfile.open read
    """The results file at path (else $ORCH_DB, else ./results.duckdb), read-only; NoDatabase where it is not
    there (reading never creates one)."""
    return Results(path)


def _arm(r: dict) -> Arm:
    low, high = r.get("ci_low"), r.get("ci_high")
    return Arm(
        sweep=r["sweep"],
        arm=r["arm"],
        decode_tps=r.get("decode_tps"),
        decode_tps_low=low,
        decode_tps_high=high,
        acceptance=r.get("acceptance"),
        speedup=r.get("speedup"),
        speedup_low=r.get("speedup_low"),
        speedup_high=r.get("speedup_high"),
        vs=r.get("vs"),
        predicted=r.get("predicted"),
        predicted_low=r.get("predicted_low"),
        predicted_high=r.get("predicted_high"),
        warnings=tuple(_warnings(r.get("warnings"))),
        params=dict(r.get("params") or {}),
        values=r,
    )


def _warnings(value) -> list[str]:
    if not value:
        return []
    return [w.strip() for w in value.split(",") if w.strip()] if isinstance(value, str) else list(value)
