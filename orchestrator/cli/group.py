"""The `orch` command line: each command parses its options and calls one function."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from orchestrator import __version__
from orchestrator import config
from orchestrator.errors import OrchError


class OrchGroup(click.Group):
    """Prints an OrchError as one line and exits with its code; tracebacks only with --debug."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except OrchError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"orch: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("orch: interrupted", err=True)
            sys.exit(130)


@click.group(cls=OrchGroup)
@click.version_option(__version__, prog_name="orch")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def main(ctx, debug):
    """Benchmark speculative decoding across llama.cpp commits.

    Example: orch build 0c1e57098 && orch builds
    """
    ctx.obj = {"debug": debug}


db_option = click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="Results database (default: $ORCH_DB or ./results.duckdb).")


@main.command("build")
@click.argument("commit")
@click.option("-b", "--backend", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="auto picks CUDA only when nvcc is on PATH and NVML sees a GPU.")
@click.option("--cuda-arch", default=None, help="CUDA compute capabilities, e.g. 86 or '86;90' (default: the GPUs').")
@click.option("--cmake-arg", "cmake_args", multiple=True, help="Extra argument passed to CMake configure (repeatable).")
@click.option("-f", "--force", is_flag=True, help="Rebuild from scratch even when a complete build exists.")
@click.option("-s", "--source", default=None,
              help="Git remote URL or path to fetch from (default: $ORCH_LLAMA_REPO or upstream GitHub).")
@db_option
def build_command(commit, backend, cuda_arch, cmake_args, force, source, db):
    """Build llama.cpp at COMMIT (cached).

    COMMIT is a full or abbreviated sha, a tag or a branch.

    Example: orch build 0c1e57098 --backend cpu
    """
    from orchestrator.build.builder import build

    info = build(commit, backend=backend, cuda_arch=cuda_arch, cmake_args=cmake_args, force=force,
                 source=source, db=db)
    click.echo(info["bin_dir"])


@main.command("builds")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
def builds_command(as_json):
    """List complete builds (newest first).

    Example: orch builds --json
    """
    from orchestrator.build.builder import list_builds

    builds = list_builds()
    if as_json:
        click.echo(json.dumps(builds, indent=2))
        return
    if not builds:
        click.echo(f"no builds in {config.builds_root()}; run `orch build COMMIT`")
    for b in builds:
        click.echo(f"{b['name']:<24} {b['upstream_commit'][:12]}  {b['backend']:<5} {b['finished_at'][:19]}  "
                   f"{len(b['binaries'])} binaries  {b['dir']}")


@main.group("mirror")
def mirror_group():
    """Manage the local llama.cpp source mirror."""


@mirror_group.command("sdist")
@click.argument("versions", nargs=-1, required=True)
def mirror_sdist(versions):
    """Import llama.cpp from llama-cpp-python sdists.

    Brings the llama.cpp commit each VERSION vendors into the mirror, from PyPI through pip.

    Example: orch mirror sdist 0.3.36 0.3.20
    """
    from orchestrator.source.sdist import import_versions
    from orchestrator.source.mirror import Mirror

    for version, sha in import_versions(list(versions), Mirror(config.mirror_dir()), config.builds_root()):
        click.echo(f"{version}\t{sha}")


@mirror_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def mirror_list(as_json):
    """Show mirror commits and where they came from.

    Example: orch mirror list
    """
    from orchestrator.source.mirror import Mirror

    mirror = Mirror(config.mirror_dir())
    rows = mirror.list_commits()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"mirror {mirror.path} is empty; run `orch mirror sdist VERSION` or `orch build COMMIT`")
    for row in rows:
        click.echo(f"{row['commit'][:12]}  {row['date'][:10]}  {', '.join(row['refs']) or '-':<28} {row['source']}")


def _open_db(db):
    from orchestrator import store

    return store.connect(db or config.db_path())


@main.group("models")
def models_group():
    """Make and inspect GGUF models."""


@models_group.command("tiny")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: $ORCH_MODELS or ./models).")
@click.option("--build", "build_ref", default=None, help="Build whose source tree provides the vocabularies.")
def models_tiny(out, build_ref):
    """Write tiny target/draft GGUF models.

    Also a draft with another vocabulary, for mismatch tests.

    Example: orch models tiny --out models
    """
    from orchestrator.recipe import plan as recipe
    from orchestrator.models import tiny
    from orchestrator.build.builder import find_build

    build = find_build(build_ref)
    paths = tiny.make_tiny_models(out or recipe.models_dir(), tiny.find_vocab_dir(Path(build["src_dir"])))
    for role, path in paths.items():
        click.echo(f"{role}\t{path}")


@models_group.command("inspect")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@db_option
def models_inspect(path, as_json, db):
    """Print a GGUF file's metadata (and store it).

    Architecture, parameters, file type, vocabulary type and size, bos/eos, quantisation mix (bytes per
    tensor type), weight bytes, experts (total and used per token) and the bytes one decode step reads.

    Example: orch models inspect models/tiny-target.gguf
    """
    from orchestrator.models import gguf_info

    info = gguf_info.inspect(path).to_dict()
    from orchestrator import store

    con = _open_db(db)
    store.record_model(con, info)  # runs join models on sha256
    con.close()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key, value in info.items():
        click.echo(f"{key:>18}: {value}")
