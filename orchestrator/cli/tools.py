"""`orch env`, `orch reparse`, `orch parse`: the machine, and logs read again."""

from __future__ import annotations

import json
from pathlib import Path

import click

from orchestrator.cli.group import db_option, main, opened_db


@main.command("env")
@click.option("-f", "--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("--build", "build_ref", default=None, help="Include this build's CMake options (default: newest).")
def env_command(fmt, build_ref):
    """Print this machine's benchmark environment.

    OS, kernel, CPU, RAM, GPUs (memory, driver, CUDA driver, power limit, PCIe link), CUDA toolkit, Python,
    orch version and commit, and the build's CMake options: the page every sweep stores with its results.

    Example: orch env --format json
    """
    from orchestrator.build.builder import find_build
    from orchestrator.errors import NoSuchBuild
    from orchestrator.machine import envinfo

    try:
        build = find_build(build_ref)
    except NoSuchBuild:
        if build_ref:
            raise
        build = None
    snap = envinfo.snapshot(build)
    click.echo(json.dumps(snap, indent=2, default=str) if fmt == "json" else envinfo.to_markdown(snap))


@main.command("reparse")
@db_option
def reparse_command(db):
    """Re-derive stored metrics from the raw logs.

    Every stored run is parsed again with the current parsers; prints how many runs changed and which fields.

    Example: orch reparse
    """
    from orchestrator.store.reparse import reparse_all

    with opened_db(db, write=True) as con:
        result = reparse_all(con)
    click.echo("\n".join(result.lines()))


@main.command("parse")
@click.argument("logfiles", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def parse_command(logfiles, as_json):
    """Parse saved llama.cpp logs and print the metrics.

    LOGFILES may be stdout, stderr or both (concatenated in the order given).

    Example: orch parse run.stderr run.stdout --json
    """
    from orchestrator import parse

    parsed = parse.parse_text("\n".join(p.read_text(errors="replace") for p in logfiles))
    if as_json:
        click.echo(json.dumps(parsed.to_dict(), indent=2, default=str))
        return
    for key, value in parsed.metrics.items():
        click.echo(f"{key:>20}: {value}")
    if parsed.version:
        click.echo(f"{'version':>20}: {parsed.version}")
