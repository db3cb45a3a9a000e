"""`orch env`: this machine's benchmark environment (CPU, GPUs, clocks, a build's provenance), as text or JSON."""

from __future__ import annotations

import click

from orchestrator.build.on_disk import find_build
from orchestrator.cli.group import data_format, main
from orchestrator.cli.output import echo_json_or_text
from orchestrator.errors import NoSuchBuild
from orchestrator.machine import envinfo


@main.command("env")
@data_format("md", "json", default="md")
@click.option("--build", "build_ref", default=None, help="Include this build's CMake options (default: newest).")
def env_command(fmt, build_ref):
    """Print this machine's benchmark environment.

    OS, kernel, CPU, RAM, GPUs (memory, driver, CUDA driver, power limit, PCIe link), CUDA toolkit, Python,
    orch version and commit, and the build's CMake options: the page every sweep stores with its results.

    Example: orch env --format json
    """

    try:
        build = find_build(build_ref)
    except NoSuchBuild:
        if build_ref:
            raise
        build = None
    snap = envinfo.snapshot(build.as_stored() if build else None)
    echo_json_or_text(snap, fmt == "json", lambda: envinfo.to_markdown(snap))
