"""What an import checks in its staging database before anything merges, row by row: rows are data someone else
made. Refused (ExportRowRefused, one line naming the table, the row and the check; nothing written anywhere):
schema migrations that skip a number; a key column (exchange_tables.TABLES: what names a row in every database)
that is NULL or names two rows; a run_logs row that is not gzip, decompresses to another size than its size_bytes,
or past the cap (checked in pieces, never whole in memory); a metric orch never writes (NaN, infinite, negative,
an acceptance outside 0-100%: parse.check_ranges' rules, which crashed summary, compare and report); a text or
JSON value past MAX_TEXT characters, or JSON nested past MAX_DEPTH (a 5,000-deep params crashed every reader). Before, a
repeated sweep uid multiplied runs, a repeated run uid ended in a traceback, a NULL uid imported under a fresh one,
and a bad log row broke `orch show` later."""

from __future__ import annotations

import re

import duckdb

from orchestrator.errors import ExportRowRefused
from orchestrator.parse import METRIC_KEYS
from orchestrator.store import logs
from orchestrator.store.exchange_tables import TABLES


def check_migrations(migrations: set[int], where: str) -> None:
    """The source's schema migrations are 1..N: a gap is no schema orch makes (and staging it failed in a traceback)."""
    if missing := sorted(set(range(1, max(migrations, default=0) + 1)) - migrations):
        _refuse(
            where,
            "_migrations",
            None,
            f"its schema skips migration{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing[:5]))}: not a schema orch makes",
        )


def check_staged(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """The key and log-row checks on the staged rows, at the source's own schema (before this orch's migrations)."""
    present = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    for table in TABLES:
        if table.name in present:
            _keys(con, where, table.name, [k for k in table.key if k in _columns(con, table.name)])
    if "run_logs" in present:
        _log_rows(con, where)
    if "metrics" in present:
        _metrics(con, where)
    for table in sorted(present - {"_migrations"}):
        _texts(con, where, table)


SHARES = ("acceptance", "seq_acceptance", "seq_acceptance_low", "seq_acceptance_high")  # within 0-1
FLOATS = ("DOUBLE", "FLOAT", "REAL")


def _metrics(con, where: str) -> None:
    """Each metric orch writes as a number is finite and not negative, and a share lies within 0-1."""
    kinds = dict(
        con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'metrics'").fetchall()
    )
    for key in (k for k in METRIC_KEYS if k in kinds and kinds[k] in (*FLOATS, "INTEGER", "BIGINT", "SMALLINT")):
        cannot = [
            f"{key} < 0",
            *([f"isnan({key})", f"isinf({key})"] if kinds[key] in FLOATS else []),
            *([f"{key} > 1"] if key in SHARES else []),
        ]
        found = con.execute(
            f"SELECT rowid + 1, {key} FROM metrics WHERE {' OR '.join(cannot)} ORDER BY rowid LIMIT 1"
        ).fetchone()
        if found:
            _refuse(where, "metrics", f"row {found[0]}", f"{key} = {found[1]} is no figure orch writes")


MAX_TEXT = 16 << 20  # characters of one stored text or JSON value: a recipe, a run's metrics JSON are far under it
MAX_DEPTH = 64  # nesting of one stored JSON value: orch's are a few levels deep (parsing 5,000 overflowed the stack)


def _texts(con, where: str, table: str) -> None:
    """Each text and JSON value of the table within MAX_TEXT characters, and each JSON value nested at most
    MAX_DEPTH deep (only a value with more opening brackets than that can be, so only those are scanned)."""
    kinds = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? AND data_type IN ('VARCHAR', 'JSON')",
        [table],
    ).fetchall()
    for column, kind in kinds:
        long = con.execute(
            f'SELECT rowid + 1, length("{column}") FROM {table} WHERE length("{column}") > {MAX_TEXT} LIMIT 1'
        ).fetchone()
        if long:
            _refuse(
                where,
                table,
                f"row {long[0]}",
                f"{column} holds {long[1]:,} characters (orch writes at most {MAX_TEXT:,})",
            )
        if kind != "JSON":
            continue
        cursor = con.execute(
            f'SELECT rowid + 1, "{column}"::VARCHAR FROM {table} WHERE '
            f"length(regexp_replace(\"{column}\"::VARCHAR, '[^\\[{{]', '', 'g')) > {MAX_DEPTH} ORDER BY rowid"
        )
        while row := cursor.fetchone():
            if (depth := json_depth(row[1])) > MAX_DEPTH:
                _refuse(
                    where, table, f"row {row[0]}", f"{column} is JSON nested {depth} deep (orch's: at most {MAX_DEPTH})"
                )


def json_depth(text: str) -> int:
    """How deep a JSON text nests its arrays and objects, read without recursion (strings skipped)."""
    depth = deepest = 0
    for token in STRUCTURE.finditer(text):
        if token.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token.group() in "]}":
            depth -= 1
    return deepest


STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _columns(con, table: str) -> set[str]:
    return {
        r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ?", [table]).fetchall()
    }


def _keys(con, where: str, table: str, keys: list[str]) -> None:
    if not keys:
        return
    cols = ", ".join(keys)
    null = con.execute(
        f"SELECT rowid + 1 FROM {table} WHERE {' OR '.join(f'{k} IS NULL' for k in keys)} ORDER BY rowid LIMIT 1"
    ).fetchone()
    if null:
        _refuse(where, table, f"row {null[0]}", f"its key ({cols}) is NULL")
    twice = con.execute(f"SELECT {cols}, count(*) FROM {table} GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchone()
    if twice:
        named = ", ".join(f"{k}={str(v)[:60]}" for k, v in zip(keys, twice))
        _refuse(where, table, named, f"{twice[-1]} rows share this key, which names one row")


def _log_rows(con, where: str) -> None:
    cursor = con.execute("SELECT run_id, stream, size_bytes, gz FROM run_logs ORDER BY run_id, stream")
    while row := cursor.fetchone():
        run_id, stream, size, gz = row
        try:
            logs.unpacked(gz, size, keep=False)
        except ValueError as exc:
            _refuse(where, "run_logs", f"run_id={run_id}, stream={str(stream)[:40]}", str(exc))


def _refuse(where: str, table: str, row: str | None, check: str) -> None:
    at = f"table {table}, {row}" if row else f"table {table}"
    raise ExportRowRefused(
        f"{where}: {at}: {check}; nothing was imported: export it again from an undamaged results file"
    )
