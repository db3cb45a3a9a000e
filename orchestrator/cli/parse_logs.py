"""`orch parse`: saved logs orch did not run read as one run: their kind, metrics and failure class."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import input_files
from orchestrator.cli.group import main
from orchestrator.cli.output import echo_json_or_text
from orchestrator.parse.saved_logs import LogFile, read_logs


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

    files = []
    for path in logfiles:  # named by its path: a failed read (not open) says no file name (/proc/self/mem)
        try:
            files.append(LogFile(str(path), input_files.read_bytes(path, input_files.LOG_CAP)))
        except OSError as exc:
            raise click.BadParameter(f"{path} cannot be read ({exc.strerror or exc})", param_hint="LOGFILES") from None
    reading = read_logs(files)
    echo_json_or_text(reading.to_dict(), as_json, lambda: "\n".join(reading.lines()))
