"""`orch build`: llama.cpp built at a commit (cached: a complete build is reused, a missing tool added)."""

from __future__ import annotations

import click

from orchestrator.build.builder import build
from orchestrator.cli.group import db_option, main


@main.command("build")
@click.argument("commit")
@click.option(
    "-b",
    "--backend",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="auto picks CUDA only when nvcc is on PATH and NVML sees a GPU.",
)
@click.option("--cuda-arch", default=None, help="CUDA compute capabilities, e.g. 86 or '86;90' (default: the GPUs').")
@click.option("--cmake-arg", "cmake_args", multiple=True, help="Extra argument passed to CMake configure (repeatable).")
@click.option("-f", "--force", is_flag=True, help="Rebuild from scratch even when a complete build exists.")
@click.option(
    "-s",
    "--source",
    default=None,
    help="Git remote URL or path to fetch from (default: $ORCH_LLAMA_REPO or upstream GitHub).",
)
@db_option
def build_command(commit, backend, cuda_arch, cmake_args, force, source, db):
    """Build llama.cpp at COMMIT (cached).

    COMMIT is a full or abbreviated sha, a tag or a branch.

    Example: orch build 0c1e57098 --backend cpu
    """

    built = build(
        commit, backend=backend, cuda_arch=cuda_arch, cmake_args=cmake_args, force=force, source=source, db=db
    )
    click.echo(built.bin_dir)
