"""Merging a staged source into a results file, table by table in one transaction (store/exchange.py stages it): a
row whose key is stored already is compared, not written (equal: nothing; different: a conflict, kept as stored and
reported); a new row takes the target's next local id, and its links follow the global ids."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from orchestrator.store.exchange_tables import BY_NAME, TABLES, Table


@dataclass
class Conflict:
    table: str
    key: dict
    columns: list[str]  # the columns that differ

    def describe(self) -> str:
        key = ", ".join(f"{k}={v}" for k, v in self.key.items())
        return f"{self.table} {key}: {', '.join(self.columns)} differ"


@dataclass
class ImportReport:
    source: str
    added: dict[str, int] = field(default_factory=dict)  # table -> rows inserted
    present: dict[str, int] = field(default_factory=dict)  # table -> rows stored already, equal
    conflicts: list[Conflict] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # table -> rows whose linked row the source lacks


def merge(con: duckdb.DuckDBPyConnection, staging: Path, source: str) -> ImportReport:
    """Merge a staged source (staged) into con's database in one transaction."""
    report = ImportReport(source)
    con.execute(f"ATTACH '{sql_path(staging)}' AS src (READ_ONLY)")
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            tables = {
                r[0]
                for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'src'").fetchall()
            }
            for table in TABLES:
                if table.name in tables:
                    _merge_table(con, table, report)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.execute("DETACH src")
    return report


def _merge_table(con: duckdb.DuckDBPyConnection, table: Table, report: ImportReport) -> None:
    columns = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'src' "
            "AND table_name = ? ORDER BY column_index",
            [table.name],
        ).fetchall()
    ]
    # Links: the source's local ids become this file's, through the linked table's key.
    joins, replaced = [], []
    for i, (column, parent_name) in enumerate(table.links.items()):
        parent = BY_NAME[parent_name]
        on = " AND ".join(f"l.{k} = s.{k}" for k in parent.key)
        kind = "LEFT JOIN" if column in table.optional else "JOIN"
        joins.append(
            f"{kind} (SELECT s.{parent.local_id} AS src_id, l.{parent.local_id} AS here FROM "
            f"src.{parent.name} s JOIN {parent.name} l ON {on}) m{i} ON m{i}.src_id = t.{column}"
        )
        replaced.append(f"m{i}.here AS {column}")
    replaced += [f"{expr} AS {column}" for column, expr in table.inert.items() if column in columns]
    select = f"t.* REPLACE ({', '.join(replaced)})" if replaced else "t.*"
    con.execute(f"CREATE OR REPLACE TEMP TABLE _in AS SELECT {select} FROM src.{table.name} t {' '.join(joins)}")
    total = con.execute(f"SELECT count(*) FROM src.{table.name}").fetchone()[0]
    incoming = con.execute("SELECT count(*) FROM _in").fetchone()[0]
    if total - incoming:
        report.dropped[table.name] = total - incoming
    on = " AND ".join(f"l.{k} = i.{k}" for k in table.key)
    compared = [c for c in columns if c not in table.key and c != table.local_id and c not in table.volatile]
    same = " AND ".join(f"i.{c} IS NOT DISTINCT FROM l.{c}" for c in compared) or "true"
    overlap = con.execute(f"SELECT count(*) FROM _in i JOIN {table.name} l ON {on}").fetchone()[0]
    differing = con.execute(
        f"SELECT {', '.join(f'i.{k}' for k in table.key)}, "
        f"[{', '.join(f'CASE WHEN i.{c} IS DISTINCT FROM l.{c} THEN {_quote(c)} END' for c in compared)}] "
        f"FROM _in i JOIN {table.name} l ON {on} WHERE NOT ({same})"
    ).fetchall()
    for *key, flags in differing:
        report.conflicts.append(Conflict(table.name, dict(zip(table.key, key)), [c for c in flags if c]))
    report.present[table.name] = overlap - len(differing)
    kept = [c for c in columns if c != table.local_id]
    values = [f"i.{c}" for c in kept]
    if table.id_sequence:  # no column default: a new row's id from the table's own sequence
        kept, values = [table.local_id, *kept], [f"nextval('{table.id_sequence}')", *values]
    report.added[table.name] = con.execute(
        f"INSERT INTO {table.name} ({', '.join(kept)}) SELECT {', '.join(values)} FROM _in i "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table.name} l WHERE {on})"
    ).fetchone()[0]
    con.execute("DROP TABLE _in")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
