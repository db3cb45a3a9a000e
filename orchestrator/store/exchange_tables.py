"""What `orch export` writes and `orch import` merges: one entry per table, its keys and its links.

A table added by a migration that should travel between databases gets one entry here, in an order where every
table comes after the tables it links to. Its rows are chosen by `scope`, SQL over the temporary table
`_export_sweeps(id)` that holds the exported sweeps. Kept sweep summaries (sweep_summaries, sweep_summary_cells)
do not travel: they are made from the rows that do, and `orch import` keeps them anew for what it merged.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]  # what names a row in every database (its links translated first)
    scope: str  # SQL condition: this table's rows that belong to the exported sweeps
    local_id: str | None = None  # an integer id this file numbers itself: a new row takes the file's next one
    links: dict[str, str] = field(default_factory=dict)  # column -> table whose local_id it holds
    volatile: tuple[str, ...] = ()  # columns that may differ between copies of one row without a conflict
    optional: tuple[str, ...] = ()  # links that may be NULL (a run measured no quality row): kept NULL
    id_sequence: str | None = None  # where local_id has no column default: the sequence a new row's id comes from
    inert: dict[str, str] = field(default_factory=dict)  # column -> SQL over the incoming row: what it is stored as


# Imports are data, never instructions: who ran a sweep and where its logs grew mean something only on the machine
# that ran it (recovery acts on them), and what was still running there is not running here.
NOT_RUNNING = "CASE WHEN t.status = 'running' THEN 'interrupted' ELSE t.status END"
SWEEP_INERT = {
    "owner_host": "NULL",
    "owner_pid": "NULL",
    "owner_started": "NULL",
    "owner_since": "NULL",
    "work_dir": "NULL",
    "status": NOT_RUNNING,
}


SWEEPS = "SELECT id FROM _export_sweeps"
RUNS = f"SELECT id FROM runs WHERE sweep_id IN ({SWEEPS})"
BUILDS = f"SELECT build_id FROM sweeps WHERE id IN ({SWEEPS}) UNION SELECT build_id FROM runs WHERE id IN ({RUNS})"
MODELS = f"SELECT target_sha256 FROM runs WHERE id IN ({RUNS}) UNION SELECT draft_sha256 FROM runs WHERE id IN ({RUNS})"

# A tune travels with its sweeps when every round of it does (a round's sweep left behind would leave it dangling).
TUNES = f"SELECT tune_id FROM tune_rounds GROUP BY tune_id HAVING bool_and(sweep_id IN ({SWEEPS}))"
TUNE_INERT = {
    "owner_host": "NULL",
    "owner_pid": "NULL",
    "owner_started": "NULL",
    "state": "CASE WHEN t.state = 'running' THEN 'interrupted' ELSE t.state END",
}

TABLES = (
    # Where a build or model lies differs between machines and says nothing about what it is.
    Table("builds", ("id",), f"id IN ({BUILDS})", volatile=("dir", "log_path")),
    Table("binaries", ("build_id", "name"), f"build_id IN ({BUILDS})", volatile=("path",)),
    Table("models", ("sha256",), f"sha256 IN ({MODELS})", volatile=("path", "inspected_at")),
    # A sweep's bookkeeping (who runs it, its status, when) changes while it runs and differs between the shards
    # of one Ray sweep; what it is (recipe, variables, build, host) must not.
    Table(
        "sweeps",
        ("uid",),
        f"id IN ({SWEEPS})",
        local_id="id",
        volatile=(
            "status",
            "started_at",
            "ended_at",
            "argv",
            "env",
            "owner_host",
            "owner_pid",
            "owner_started",
            "owner_since",
            "work_dir",
            "planned_runs",
        ),
        inert=SWEEP_INERT,
    ),
    # Quality mode (m012): the quantized files of the exported models, and the quality rows the runs point at.
    Table("quants", ("source_sha256", "requested", "build"), f"sha256 IN ({MODELS})", volatile=("path", "created_at")),
    Table(
        "quality",
        ("uid",),
        f"id IN (SELECT quality_id FROM runs WHERE id IN ({RUNS}))",
        local_id="id",
        id_sequence="quality_id_seq",
    ),
    Table(
        "runs",
        ("uid",),
        f"id IN ({RUNS})",
        local_id="id",
        links={"sweep_id": "sweeps", "quality_id": "quality"},
        optional=("quality_id",),
        inert={"status": NOT_RUNNING},
    ),
    Table("metrics", ("run_id",), f"run_id IN ({RUNS})", links={"run_id": "runs"}, volatile=("parsed_at",)),
    Table("run_logs", ("run_id", "stream"), f"run_id IN ({RUNS})", links={"run_id": "runs"}),
    Table("requests", ("uid",), f"run_id IN ({RUNS})", links={"run_id": "runs"}),
    Table("telemetry", ("uid",), f"run_id IN ({RUNS})", links={"run_id": "runs"}),
    # orch tune (m020, m025, m026): the tune, its rounds (each an exported sweep) and its decisions. Its answer and
    # state change while it runs; what it raced (recipe, space, rules, budget) must not.
    Table(
        "tunes",
        ("uid",),
        f"id IN ({TUNES})",
        local_id="id",
        volatile=("state", "result", "ended_at", "argv", "owner_host", "owner_pid", "owner_started"),
        inert=TUNE_INERT,
    ),
    Table(
        "tune_rounds",
        ("tune_id", "workload", "round"),
        f"tune_id IN ({TUNES})",
        local_id="id",
        links={"tune_id": "tunes", "sweep_id": "sweeps"},
        volatile=("recorded_at",),
    ),
    Table(
        "tune_events",
        ("uid",),
        f"tune_id IN ({TUNES})",
        local_id="id",
        links={"tune_id": "tunes"},
        volatile=("recorded_at",),
    ),
    # m028, m030: a machine's costs and a pair's acceptance travel whole with every export (a few hundred rows; a
    # file of probes alone, with no sweep, is how a GPU host's costs reach another machine's predictions), and what
    # was predicted for each arm before it ran, linked to the acceptance probe it replayed.
    Table("cost_probes", ("uid",), "true", local_id="id"),
    Table("acceptance_probes", ("uid",), "true", local_id="id"),
    Table(
        "arm_predictions",
        ("sweep_id", "arm"),
        f"sweep_id IN ({SWEEPS})",
        links={"sweep_id": "sweeps", "acceptance_probe_id": "acceptance_probes"},
        optional=("acceptance_probe_id",),
        volatile=("made_at",),
    ),
)

BY_NAME = {t.name: t for t in TABLES}
