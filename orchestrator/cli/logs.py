"""`orch logs`: a stored run's logs written back out as files, whole or not at all."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import click

from orchestrator import config
from orchestrator.cli.group import ID, db_option, main, opened_db
from orchestrator.errors import InvalidOption, NoStoredLogs, NoSuchRun
from orchestrator.store import logs as logs_store
from orchestrator.store import queries


@main.command("logs")
@click.argument("run_id", type=ID)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    help="Folder to write into (default: the current one; created when missing).",
)
@db_option
def logs_command(run_id, out_dir, db):
    """Write a stored run's logs back out as files.

    One file per stored stream, byte for byte, named run-RUN.STREAM.log (stdout, stderr; a server run's
    stderr is the server log), for `orch parse` or a bug report; prints the paths written.

    Example: orch logs 12 --out bug-12 && orch parse bug-12/run-12.*
    """

    with opened_db(db) as con:
        run = queries.run_row(con, run_id)
        logs = logs_store.stored_logs(con, run_id) if run else {}
    if not run:
        raise NoSuchRun(f"no run {run_id} in {db or config.db_path()}; list runs with `orch runs`")
    if not logs:
        detail = f": {' '.join(run['failure_detail'].split())[:200]}" if run.get("failure_detail") else ""
        raise NoStoredLogs(
            f"run {run_id} has no stored logs (status {run['status']}{detail}); runs stopped before "
            "launch (skipped, failed pre-flight) have none"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidOption(f"--out {out_dir} is a file; give a folder (created when missing)")
    for stream, data in logs.items():
        path = out_dir / f"run-{run_id}.{re.sub(r'[^A-Za-z0-9_-]', '_', stream)}.log"
        _write_whole(path, data)
        click.echo(str(path))


def _write_whole(path: Path, data: bytes) -> None:
    """Write through a temporary name, so a reader never sees half a file; one line when it cannot be written."""

    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise InvalidOption(f"cannot write {path}: {exc.strerror or exc}; give --out a folder you can write") from None
