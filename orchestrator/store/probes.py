"""Reads and writes of cost_probes (m028): what a machine charges a model a pass or a token (run/probe.py)."""

from __future__ import annotations

import json

import duckdb

from orchestrator.store.db import rows_as_dicts, utcnow

KEY = ("build_id", "host_id", "model_sha256", "n_threads", "n_gpu_layers", "n_depth")
COLUMNS = (*KEY, "host_name", "model_name", "kind", "batch", "ms", "ms_sd", "samples_ms", "argv")


def probe_rows(con: duckdb.DuckDBPyConnection, key: dict, kind: str, *, any_build: bool = False) -> list[dict]:
    """The newest stored timing of each batch size of this kind for key (every KEY column equal, NULL to NULL; with
    any_build, whichever build timed it: another host's costs come with its own build), smallest batch first;
    samples_ms decoded."""
    named = [k for k in KEY if not (any_build and k == "build_id")]
    where = " AND ".join(f"{k} IS NOT DISTINCT FROM ?" for k in named)
    return rows_as_dicts(
        con.execute(
            f"SELECT * EXCLUDE (rank) FROM (SELECT *, row_number() OVER (PARTITION BY batch ORDER BY probed_at DESC, "
            f"id DESC) AS rank FROM cost_probes WHERE {where} AND kind = ?) WHERE rank = 1 ORDER BY batch",
            [*(key[k] for k in named), kind],
        ),
        decode_json=True,
    )


def stored_keys(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Each KEY with passes stored, and the largest pass it has: what a node need not probe again."""
    return rows_as_dicts(
        con.execute(f"SELECT {', '.join(KEY)}, max(batch) AS batch FROM cost_probes WHERE kind = 'pass' GROUP BY ALL")
    )


def hosts(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The hosts whose costs are stored (probed here, or imported), newest first: host_id, host_name, probed_at."""
    return rows_as_dicts(
        con.execute(
            "SELECT host_id, arg_max(host_name, probed_at) AS host_name, "
            "max(probed_at) AS probed_at FROM cost_probes GROUP BY host_id "
            "ORDER BY probed_at DESC"
        )
    )


def insert_probe_rows(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """Store timings (COLUMNS; samples_ms and argv as lists), all with one probed_at."""
    now = utcnow()
    con.executemany(
        f"INSERT INTO cost_probes ({', '.join(COLUMNS)}, probed_at) VALUES ({', '.join('?' * (len(COLUMNS) + 1))})",
        [[*(json.dumps(r[c]) if c in ("samples_ms", "argv") else r[c] for c in COLUMNS), now] for r in rows],
    )


ACCEPTANCE_KEY = ("build_id", "target_sha256", "draft_sha256", "prompt_sha256", "n_predict")
ACCEPTANCE_COLUMNS = (
    *ACCEPTANCE_KEY,
    "draft_window",
    "passes",
    "tokens",
    "host_id",
    "host_name",
    "cost_probe_key",
    "plain_steps",
    "draft_step_steps",
    "residual",
    "text_differs_at",
    "argv",
    "plain_argv",
    "method",
)
JSON_COLUMNS = ("passes", "cost_probe_key", "argv", "plain_argv")


def acceptance_row(
    con: duckdb.DuckDBPyConnection, key: dict, window: int, *, any_build: bool = False, host_id: str | None = None
) -> dict | None:
    """The newest acceptance probe of this workload (ACCEPTANCE_KEY; with any_build, on whichever build: what a pair
    accepts is the models' and the text's) at a window of at least `window`, one made on host_id first where
    given (its calibration is that host's), JSON decoded; None where there is none."""
    named = [k for k in ACCEPTANCE_KEY if not (any_build and k == "build_id")]
    where = " AND ".join(f"{k} = ?" for k in named)
    rows = rows_as_dicts(
        con.execute(
            f"SELECT * FROM acceptance_probes WHERE {where} AND draft_window >= ? "
            f"ORDER BY host_id IS NOT DISTINCT FROM ? DESC, probed_at DESC, id DESC "
            f"LIMIT 1",
            [*(key[k] for k in named), window, host_id],
        ),
        decode_json=True,
    )
    return rows[0] if rows else None


def insert_acceptance(con: duckdb.DuckDBPyConnection, row: dict) -> None:
    con.execute(
        f"INSERT INTO acceptance_probes ({', '.join(ACCEPTANCE_COLUMNS)}, probed_at) VALUES "
        f"({', '.join('?' * (len(ACCEPTANCE_COLUMNS) + 1))})",
        [*(json.dumps(row[c]) if c in JSON_COLUMNS else row[c] for c in ACCEPTANCE_COLUMNS), utcnow()],
    )


PREDICTION_COLUMNS = (
    "sweep_id",
    "arm",
    "predicted",
    "low",
    "high",
    "missing",
    "tokens_per_pass",
    "mean_accept_len",
    "acceptance",
    "draft_ms_per_token",
    "verify_steps",
    "break_even",
    "acceptance_probe_id",
)


def insert_predictions(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> None:
    """A sweep's arm predictions (PREDICTION_COLUMNS), made before its first run; a resumed sweep keeps its own."""
    if rows:
        con.executemany(
            f"INSERT INTO arm_predictions ({', '.join(PREDICTION_COLUMNS)}, made_at) VALUES "
            f"({', '.join('?' * (len(PREDICTION_COLUMNS) + 1))})",
            [[*(r.get(c) for c in PREDICTION_COLUMNS), utcnow()] for r in rows],
        )


def predictions_of(con: duckdb.DuckDBPyConnection, sweep_ids: list[int]) -> list[dict]:
    if not sweep_ids:
        return []
    return rows_as_dicts(
        con.execute(
            f"SELECT * FROM arm_predictions WHERE sweep_id IN "
            f"({', '.join('?' * len(sweep_ids))}) ORDER BY sweep_id, arm",
            list(sweep_ids),
        )
    )
