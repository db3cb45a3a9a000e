"""`orch builds`: the complete builds on disk, newest first, broken ones marked, with the speculation methods each
one's tools take."""

from __future__ import annotations

import click

from orchestrator import config, tables
from orchestrator.build.on_disk import list_builds
from orchestrator.cli.group import main
from orchestrator.cli.output import echo_json_or_text
from orchestrator.recipe.dialect import spec_methods


def _spec_methods(build) -> dict[str, list[str]]:
    """Per tool, the speculation methods its captured --help offers ({} where the help files are gone)."""

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
