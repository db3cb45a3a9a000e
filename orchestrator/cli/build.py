"""`orch build`, `orch builds`, `orch mirror`: llama.cpp source and builds."""

from __future__ import annotations

import click

from orchestrator import config, tables
from orchestrator.cli.group import db_option, main
from orchestrator.cli.output import echo_json_or_text


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
    from orchestrator.build.builder import build

    built = build(
        commit, backend=backend, cuda_arch=cuda_arch, cmake_args=cmake_args, force=force, source=source, db=db
    )
    click.echo(built.bin_dir)


def _spec_methods(build) -> dict[str, list[str]]:
    """Per tool, the speculation methods its captured --help offers ({} where the help files are gone)."""
    from orchestrator.recipe.dialect import spec_methods

    return spec_methods(build.help_texts())


def _methods_cell(methods: dict[str, list[str]]) -> str | None:
    """Every method any tool offers, in the order the help lists them, each marked with the tools lacking it."""
    names = list(dict.fromkeys(m for tool_methods in methods.values() for m in tool_methods))
    cells = []
    for name in names:
        only = [tool.removeprefix("llama-") for tool, found in methods.items() if name in found]
        cells.append(name if len(only) == len(methods) else f"{name} ({', '.join(only)})")
    return ", ".join(cells) or None


@main.command("builds")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@click.option(
    "--wide",
    is_flag=True,
    help="One table row per build with every field, however wide (by default a "
    "table of 120 columns, each build's tools, methods and folder on lines under it).",
)
def builds_command(as_json, wide):
    """List complete builds, newest first, broken ones marked.

    Each build's tools and the speculation methods they offer (`--spec-type` values in the captured --help; a
    method only some tools offer names them) show which recipes' arms it can run.

    Example: orch builds --json
    """
    from orchestrator.build.on_disk import list_builds

    builds = [
        {**b.as_stored(), "broken": list(b.broken), "rebuild": b.rebuild, "spec_methods": _spec_methods(b)}
        for b in list_builds()
    ]
    echo_json_or_text(builds, as_json, lambda: _builds_text(builds, wide))
    if as_json:
        return
    for b in builds:
        if b["broken"]:  # `orch run` refuses these: say how to mend each
            click.echo(f"orch: {b['name']} is broken; rebuild it with `{b['rebuild']}`", err=True)


def _builds_text(builds: list[dict], wide: bool) -> str:
    if not builds:
        return f"no builds in {config.builds_root()}; run `orch build COMMIT`"
    rows = [
        {
            "name": b["name"],
            "commit": b["upstream_commit"][:12],
            "backend": b["backend"],
            "finished": b["finished_at"][:19].replace("T", " "),
            "state": f"broken ({'; '.join(b['broken'])})" if b["broken"] else f"{len(b['binaries'])} binaries",
            "tools": ", ".join(x["name"].removeprefix("llama-") for x in b["binaries"]),
            "spec methods": _methods_cell(b["spec_methods"]),
            "dir": b["dir"],
        }
        for b in builds
    ]
    if wide:
        return tables.render(rows)
    # The long fields under the table, wrapped, so it fits a terminal.
    lines = [tables.render(rows, "table", ["name", "commit", "backend", "finished", "state"])]
    for row in rows:
        lines.append(f"{row['name']}:")
        lines += [tables.fill(f"  {key}: {row[key] or '-'}", indent="    ") for key in ("tools", "spec methods", "dir")]
    return "\n".join(lines)


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
    from orchestrator.source.mirror import Mirror
    from orchestrator.source.sdist import import_versions

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
    echo_json_or_text(rows, as_json, lambda: _commits_text(mirror.path, rows))


def _commits_text(path, rows: list[dict]) -> str:
    if not rows:
        return f"mirror {path} is empty; run `orch mirror sdist VERSION` or `orch build COMMIT`"
    return tables.render(
        [
            {
                "commit": r["commit"][:12],
                "date": r["date"][:10],
                "refs": ", ".join(r["refs"]) or None,
                "source": r["source"],
            }
            for r in rows
        ]
    )
