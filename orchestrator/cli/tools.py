"""`orch env`, `orch reparse`, `orch parse`, `orch logs`: the machine, and logs read again."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import click

from orchestrator.cli.group import ID, data_format, db_option, main, opened_db
from orchestrator.cli.output import echo_json_or_text


@main.command("env")
@data_format("md", "json", default="md")
@click.option("--build", "build_ref", default=None, help="Include this build's CMake options (default: newest).")
def env_command(fmt, build_ref):
    """Print this machine's benchmark environment.

    OS, kernel, CPU, RAM, GPUs (memory, driver, CUDA driver, power limit, PCIe link), CUDA toolkit, Python,
    orch version and commit, and the build's CMake options: the page every sweep stores with its results.

    Example: orch env --format json
    """
    from orchestrator.build.on_disk import find_build
    from orchestrator.errors import NoSuchBuild
    from orchestrator.machine import envinfo

    try:
        build = find_build(build_ref)
    except NoSuchBuild:
        if build_ref:
            raise
        build = None
    snap = envinfo.snapshot(build.as_stored() if build else None)
    echo_json_or_text(snap, fmt == "json", lambda: envinfo.to_markdown(snap))


@main.command("reparse")
@db_option
def reparse_command(db):
    """Re-derive stored metrics from the raw logs.

    Every stored run is parsed again with the current parsers; prints how many runs changed and which fields.

    Example: orch reparse
    """
    from orchestrator.analyze import summary_cache
    from orchestrator.store.reparse import reparse_all

    with opened_db(db, write=True, create=False) as con:
        result = reparse_all(con)
        summary_cache.keep_stale(con)  # the sweeps whose metrics changed
    click.echo("\n".join(result.lines()))


@main.command("parse")
@click.argument("logfiles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def parse_command(logfiles, as_json):
    """Read one run's saved logs: their kind, metrics and failure class.

    LOGFILES are one run's streams in any order (stderr, stdout, a llama-server log), as `orch logs` writes
    them. Which file is the log and what kind it is (llama-speculative(-simple), completion tool, chat
    llama-cli, llama-server, failed run) is decided by content; figures come from the log only, never from a
    prompt echoed on stdout. Exit 28 when nothing in them is recognised.

    Example: orch parse run-12.stderr.log run-12.stdout.log --json
    """
    from orchestrator import input_files
    from orchestrator.parse.saved_logs import LogFile, read_logs

    files = []
    for path in logfiles:  # named by its path: a failed read (not open) says no file name (/proc/self/mem)
        try:
            files.append(LogFile(str(path), input_files.read_bytes(path, input_files.LOG_CAP)))
        except OSError as exc:
            raise click.BadParameter(f"{path} cannot be read ({exc.strerror or exc})", param_hint="LOGFILES") from None
    reading = read_logs(files)
    echo_json_or_text(reading.to_dict(), as_json, lambda: "\n".join(reading.lines()))


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
    from orchestrator import config
    from orchestrator.errors import InvalidOption, NoStoredLogs, NoSuchRun
    from orchestrator.store import logs as logs_store
    from orchestrator.store import queries

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
    from orchestrator.errors import InvalidOption

    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise InvalidOption(f"cannot write {path}: {exc.strerror or exc}; give --out a folder you can write") from None
