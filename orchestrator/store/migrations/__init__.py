"""Numbered schema migrations, one file each (mNNN_what.py), applied in order on every open and recorded in
`_migrations`.

Append new migrations (a new file, and its name in MIGRATIONS); never edit one that has shipped. A migration
changes tables only, with its own SQL and its own code (nothing it imports may change after it ships): the views are
store/views.py's, made when a file is opened, and no live module imports a migration (the view statements of
m006-m023 were taken out when the views moved there: a file's views are made the same whatever made it before).
A migration's number
is in its name, not its place. Timestamps are TIMESTAMP in UTC, written by orch (store/times.py).
"""

from __future__ import annotations

import duckdb

from orchestrator.store.migrations.m001_builds import m001_builds
from orchestrator.store.migrations.m002_runs import m002_runs
from orchestrator.store.migrations.m003_requests import m003_requests
from orchestrator.store.migrations.m004_sweeps import m004_sweeps
from orchestrator.store.migrations.m005_insight import m005_insight
from orchestrator.store.migrations.m006_views import m006_views
from orchestrator.store.migrations.m007_samples_and_controls import m007_samples_and_controls
from orchestrator.store.migrations.m008_sweep_owner import m008_sweep_owner
from orchestrator.store.migrations.m009_costs import m009_costs
from orchestrator.store.migrations.m010_seq_acceptance import m010_seq_acceptance
from orchestrator.store.migrations.m011_output_parity import m011_output_parity
from orchestrator.store.migrations.m012_quality import m012_quality
from orchestrator.store.migrations.m013_bisects import m013_bisects
from orchestrator.store.migrations.m014_global_ids import m014_global_ids
from orchestrator.store.migrations.m015_sweep_summaries import m015_sweep_summaries
from orchestrator.store.migrations.m016_derived_views import m016_derived_views
from orchestrator.store.migrations.m017_generated_and_loops import m017_generated_and_loops
from orchestrator.store.migrations.m018_first_diff_token import m018_first_diff_token
from orchestrator.store.migrations.m019_roofline_per_step import m019_roofline_per_step
from orchestrator.store.migrations.m020_tunes import m020_tunes
from orchestrator.store.migrations.m021_tune_owner import m021_tune_owner
from orchestrator.store.migrations.m022_run_build_views import m022_run_build_views
from orchestrator.store.migrations.m023_request_rates import m023_request_rates
from orchestrator.store.migrations.m024_sweep_arms import m024_sweep_arms
from orchestrator.store.migrations.m025_tune_decision_kinds import m025_tune_decision_kinds
from orchestrator.store.migrations.m026_tune_uids import m026_tune_uids
from orchestrator.store.migrations.m027_summary_stamp import m027_summary_stamp
from orchestrator.store.migrations.m028_probes import m028_probes
from orchestrator.store.migrations.m029_near_ties import m029_near_ties
from orchestrator.store.migrations.m030_probes_travel import m030_probes_travel
from orchestrator.store.migrations.m031_typed_answer_decisions import m031_typed_answer_decisions
from orchestrator.store.times import utcnow

MIGRATIONS = [
    m001_builds,
    m002_runs,
    m003_requests,
    m004_sweeps,
    m005_insight,
    m006_views,
    m007_samples_and_controls,
    m008_sweep_owner,
    m009_costs,
    m010_seq_acceptance,
    m011_output_parity,
    m012_quality,
    m013_bisects,
    m014_global_ids,
    m015_sweep_summaries,
    m016_derived_views,
    m017_generated_and_loops,
    m018_first_diff_token,
    m019_roofline_per_step,
    m020_tunes,
    m021_tune_owner,
    m022_run_build_views,
    m023_request_rates,
    m024_sweep_arms,
    m025_tune_decision_kinds,
    m026_tune_uids,
    m027_summary_stamp,
    m028_probes,
    m029_near_ties,
    m030_probes_travel,
    m031_typed_answer_decisions,
]


def number(migration) -> int:
    """A migration's number is in its name (m014_global_ids: 14), not its place in the list, so migrations added
    on branches in parallel merge without renumbering, and a file records which ones it has by number."""
    return int(migration.__name__[1:4])


def pending(con: duckdb.DuckDBPyConnection) -> int:
    """How many migrations the file lacks (read-only: it changes nothing)."""
    if not con.execute(
        "SELECT 1 FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = '_migrations'"
    ).fetchone():
        return len(MIGRATIONS)
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    return sum(number(m) not in done for m in MIGRATIONS)


def done_numbers(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The numbers of the migrations the file has (what an export records as its schema)."""
    return sorted(row[0] for row in con.execute("SELECT id FROM _migrations").fetchall())


def apply(con: duckdb.DuckDBPyConnection, only: set[int] | None = None) -> list[str]:
    """Apply pending migrations (with `only`, just those numbers: an older export's schema); the names applied."""
    con.execute("CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)")
    done = {row[0] for row in con.execute("SELECT id FROM _migrations").fetchall()}
    applied = []
    for migration in MIGRATIONS:
        n = number(migration)
        if n in done or (only is not None and n not in only):
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            migration(con)
            con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [n, migration.__name__, utcnow()])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(migration.__name__)
    return applied
