"""Moving results between databases: export sweeps as Parquet, import exports or results files by global id.

    counts = export(con, out_dir, sweep_ids)          # one <table>.parquet per table + manifest.json
    with staged(path) as staging:                      # an export directory or a .duckdb file, checked, as a
        report = merge(con, staging, str(path))        # database of its own; then merged into con's file
    report = import_source(con, path)                  # both in one

An import first rebuilds the source as a database of its own (a staging file in orch's work directory): an export's
Parquet files go into a database at the export's schema, then the migrations it lacks run there (an old export
gains its uids as the migration gives them). Staging checks the export whole first: every table its schema has is
there, each file has the sha256 and the row count the manifest names, and each reads as its table. Nothing of a
source that fails is written anywhere. The staging rows then merge into the target table by table
(store/exchange_merge.py). Imported rows are data, never instructions: a sweep keeps no owner or work directory (the
recovery on open would otherwise act on them), and a sweep or run still `running` where it came from is
`interrupted` here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from orchestrator import __version__, input_files
from orchestrator.errors import BadExport, ExportDamaged
from orchestrator.message_lines import first_line
from orchestrator.store import import_checks, migrations, workdirs
from orchestrator.store.exchange_merge import ImportReport, merge, sql_path
from orchestrator.store.exchange_tables import BY_NAME, TABLES

FORMAT = "orch-export"
MAX_CONFLICTS_SHOWN = 5
LINE_LIMIT = 300  # characters of a DuckDB error line shown: one can hold a whole query
MANIFEST_CAP = 1 << 20  # a manifest lists ~20 tables: far under a MiB


def export(con: duckdb.DuckDBPyConnection, out_dir: Path, sweep_ids: list[int] | None = None) -> dict[str, int]:
    """Write the sweeps (all when None), with everything they reference, to out_dir; rows per table. The manifest,
    written last, names each file's rows and sha256: an export cut short has none and imports nowhere."""
    stored = {r[0] for r in con.execute("SELECT id FROM sweeps").fetchall()}
    chosen = sorted(stored) if sweep_ids is None else sweep_ids
    if lacking := [s for s in chosen if s not in stored]:
        raise BadExport(f"no sweep {', '.join(map(str, lacking))} in this database; list them with `orch summary`")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").unlink(missing_ok=True)  # an older export's manifest must not vouch for these files
    con.execute("CREATE OR REPLACE TEMP TABLE _export_sweeps (id INTEGER)")
    if chosen:  # none: a file of probes alone (store/exchange_tables: they travel with every export)
        con.executemany("INSERT INTO _export_sweeps VALUES (?)", [[s] for s in chosen])
    counts, digests = {}, {}
    try:
        for table in TABLES:
            path = out_dir / f"{table.name}.parquet"
            con.execute(f"COPY (SELECT * FROM {table.name} WHERE {table.scope}) TO '{sql_path(path)}' (FORMAT PARQUET)")
            counts[table.name] = con.execute(f"SELECT count(*) FROM read_parquet('{sql_path(path)}')").fetchone()[0]
            digests[table.name] = _sha256(path)
        uids = [
            r[0]
            for r in con.execute(
                "SELECT uid FROM sweeps WHERE id IN (SELECT id FROM _export_sweeps) ORDER BY id"
            ).fetchall()
        ]
    finally:
        con.execute("DROP TABLE _export_sweeps")
    manifest = {
        "format": FORMAT,
        "orch_version": __version__,
        "migrations": migrations.done_numbers(con),
        "tables": counts,
        "sha256": digests,
        "sweeps": uids,
    }
    partial = out_dir / "manifest.json.partial"
    partial.write_text(json.dumps(manifest, indent=1) + "\n")
    partial.replace(out_dir / "manifest.json")
    return counts


def import_source(con: duckdb.DuckDBPyConnection, source: Path) -> ImportReport:
    """Merge an export directory (or its manifest.json) or a results .duckdb file into con's database."""
    with staged(source) as staging:
        return merge(con, staging, str(source))


@contextmanager
def staged(source: Path) -> Iterator[Path]:
    """`with staged(source) as staging:` the source checked and rebuilt as a database file of its own in orch's
    work directory (removed after; a killed orch's is removed by the next one). BadExport for what is not an
    export or results file, ExportDamaged for an export with a table missing, truncated or altered."""
    source = Path(source)
    with workdirs.temporary("import") as work:
        staging = work / "staging.duckdb"
        if source.is_dir() or source.name == "manifest.json":
            _stage_export(source if source.is_dir() else source.parent, staging)
        elif source.is_file():
            _stage_database(source, staging)
        elif source.exists():  # /dev/null, a FIFO: nothing an export or a results file is
            raise BadExport(
                f"{source} is not a regular file; give an `orch export` directory or a results .duckdb file"
            )
        else:
            raise BadExport(f"{source} does not exist; give an `orch export` directory or a results .duckdb file")
        yield staging


def _stage_export(directory: Path, staging: Path) -> None:
    manifest = _manifest(directory)
    _refuse_newer(set(manifest["migrations"]), str(directory), manifest.get("orch_version"))
    import_checks.check_migrations(set(manifest["migrations"]), str(directory))
    counts, digests = manifest["tables"], manifest.get("sha256") or {}
    for name in counts:
        _check_file(directory / f"{name}.parquet", name, counts[name], digests.get(name))
    con = duckdb.connect(str(staging))
    try:
        migrations.apply(con, only=set(manifest["migrations"]))  # the export's own schema
        present = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if lacking := [t.name for t in TABLES if t.name in present and t.name not in counts]:
            raise ExportDamaged(
                f"{directory} lacks the table{'s' if len(lacking) > 1 else ''} {', '.join(lacking)} "
                f"(its manifest.json does not list them): an incomplete export; export it again"
            )
        for name in counts:
            _stage_table(con, directory / f"{name}.parquet", name, counts[name])
        import_checks.check_staged(con, str(directory))
        migrations.apply(con)  # then what this orch adds since: global ids, hosts, ...
    finally:
        con.close()


def _manifest(directory: Path) -> dict:
    """manifest.json, checked for the shape every later step relies on."""
    path = directory / "manifest.json"
    try:  # read as any file a user names: a FIFO or /dev/zero in its place is refused, not read for ever
        manifest = json.loads(input_files.read_text(path, cap=MANIFEST_CAP))
    except (OSError, ValueError, RecursionError):
        raise BadExport(
            f"{directory} is not an orch export (no readable manifest.json); make one with `orch export --out DIR`"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BadExport(
            f"{path} is not an orch export manifest (format "
            f"{manifest.get('format') if isinstance(manifest, dict) else None!r})"
        )
    tables, digests, numbers = manifest.get("tables"), manifest.get("sha256", {}), manifest.get("migrations")
    if (
        not isinstance(tables, dict)
        or not isinstance(digests, dict)
        or not isinstance(numbers, list)
        or not all(type(n) is int for n in [*tables.values(), *numbers])
        or not all(isinstance(d, str) for d in digests.values())
    ):
        raise ExportDamaged(
            f"{path} is damaged: its tables, sha256 and migrations are not the counts, hashes and "
            f"numbers orch writes; export it again"
        )
    if unknown := sorted(set(tables) - set(BY_NAME)):
        raise ExportDamaged(
            f"{path} names tables orch does not export ({', '.join(unknown)[:200]}): not an orch "
            f"export as made; export it again"
        )
    return manifest


def _check_file(path: Path, name: str, rows: int, digest: str | None) -> None:
    if not path.is_file():
        raise ExportDamaged(
            f"{path} is missing (the manifest lists {rows} {name} rows): an incomplete export; copy "
            f"the whole directory or export it again"
        )
    if digest is not None and _sha256(path) != digest:
        raise ExportDamaged(
            f"{path} is not the file that was exported (its sha256 differs from manifest.json): "
            f"altered or damaged on the way; export it again"
        )


def _stage_table(con: duckdb.DuckDBPyConnection, path: Path, name: str, rows: int) -> None:
    """The file's rows into the staging table, column by column by name and of the table's types exactly."""
    try:
        wanted = dict(
            con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?", [name]).fetchall()
        )
        found = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{sql_path(path)}')").fetchall()
        if wrong := [
            f"{c} is {t}, not {wanted.get(c, 'a column of it')}"
            for c, t, *_ in found
            if _type(t) != _type(wanted.get(c))
        ]:
            raise ExportDamaged(
                f"{path} does not hold the {name} table orch exports: {'; '.join(wrong[:3])}; export it again"
            )
        read = con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM read_parquet('{sql_path(path)}')").fetchone()[0]
    except duckdb.Error as exc:
        raise ExportDamaged(
            f"{path} cannot be read as the {name} table ({first_line(exc, limit=LINE_LIMIT)}): "
            f"truncated or damaged; export it again"
        ) from None
    if read != rows:
        raise ExportDamaged(
            f"{path} holds {read} {name} rows where manifest.json lists {rows}: altered or damaged; export it again"
        )


def _type(name: str | None) -> str | None:
    """A column type as Parquet carries it: JSON travels as text."""
    return "VARCHAR" if name == "JSON" else name


def _stage_database(source: Path, staging: Path) -> None:
    shutil.copyfile(source, staging)  # a copy: the source is read, never migrated in place

    def reason(exc: Exception) -> str:  # DuckDB names the file it opened: the user's is the one to name
        return first_line(exc, limit=LINE_LIMIT).replace(f'"{staging}"', str(source)).replace(str(staging), str(source))

    try:
        con = duckdb.connect(str(staging))
    except duckdb.Error as exc:
        raise BadExport(f"{source} is not a DuckDB results file ({reason(exc)})") from None
    try:
        if not con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = '_migrations'").fetchone():
            raise BadExport(f"{source} is a DuckDB file but not an orch results database (no _migrations table)")
        _refuse_newer(set(migrations.done_numbers(con)), str(source), None)
        import_checks.check_migrations(set(migrations.done_numbers(con)), str(source))
        import_checks.check_staged(con, str(source))
        migrations.apply(con)
    except duckdb.Error as exc:
        raise BadExport(
            f"{source} cannot be read as an orch results file ({reason(exc)}); give an `orch "
            f"export` directory or an undamaged results file"
        ) from None
    finally:
        con.close()


def _refuse_newer(numbers: set[int], where: str, version: str | None) -> None:
    known = {migrations.number(m) for m in migrations.MIGRATIONS}
    if unknown := sorted(numbers - known):
        raise BadExport(
            f"{where} was made by a newer orch{f' ({version})' if version else ''} (schema migrations "
            f"{', '.join(map(str, unknown))} unknown here): upgrade orch (this is {__version__}) to import it"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
