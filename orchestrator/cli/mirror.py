"""`orch mirror`: the local llama.cpp source mirror, filled from llama-cpp-python sdists, and what it holds."""

from __future__ import annotations

import click

from orchestrator import config, tables
from orchestrator.cli.group import main
from orchestrator.cli.output import echo_json_or_text
from orchestrator.source.mirror import Mirror
from orchestrator.source.sdist import import_versions


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

    for version, sha in import_versions(list(versions), Mirror(config.mirror_dir()), config.builds_root()):
        click.echo(f"{version}\t{sha}")


@mirror_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def mirror_list(as_json):
    """Show mirror commits and where they came from.

    Example: orch mirror list
    """

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
