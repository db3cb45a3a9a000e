"""mkdocs hooks for orch's docs (mkdocs.yml `hooks:`): the schema page is made from the migrations and views when
the site is built, so it is the schema a results file has today, never a copy that drifts; and the CLI reference
shows each option's real default (click 8.3 and later mark "no default given" with a sentinel that mkdocs-click
prints as `Sentinel.UNSET`: a flag is off, any other option has none).

`<!-- schema -->` on a page becomes every table and view with its columns (a results file made in a temporary
folder, migrated as `orch` migrates one) and the list of migrations with what each one did (its docstring).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

MARKER = "<!-- schema -->"


def on_config(config):
    import click

    from orchestrator.cli import main

    unset = getattr(click.core, "UNSET", object())
    for command in _commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and param.default is unset:
                param.default = False if param.is_flag and not param.multiple else None
    made = click.Command.get_help_option  # --help is made afresh for each listing, with no default either

    def help_option(self, ctx):
        option = made(self, ctx)
        if option is not None and option.default is unset:
            option.default = False
        return option

    click.Command.get_help_option = help_option
    return config


def _commands(command):
    yield command
    if hasattr(command, "list_commands"):  # orch loads a command's module as it is asked for (cli/group.COMMANDS)
        for name in command.list_commands(None):
            yield from _commands(command.get_command(None, name))


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, schema_markdown())


def schema_markdown() -> str:
    from orchestrator import store
    from orchestrator.store.migrations import MIGRATIONS, number

    with tempfile.TemporaryDirectory(prefix="orch-docs-") as tmp:
        with store.opened(Path(tmp) / "schema.duckdb") as con:
            kinds = dict(
                con.execute(
                    "SELECT table_name, table_type FROM information_schema.tables "
                    "WHERE table_schema = 'main' AND table_name <> '_migrations'"
                ).fetchall()
            )
            lines = ["| table or view | columns |", "|---|---|"]
            for table in sorted(kinds):
                cols = con.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE "
                    "table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
                kind = "view" if kinds[table] == "VIEW" else "table"
                lines.append(f"| {kind} `{table}` | " + ", ".join(f"`{c}` {t.lower()}" for c, t in cols) + " |")
    lines += ["", "The migrations that made it, in order (`orchestrator/store/migrations/`):", ""]
    for migration in MIGRATIONS:
        doc = " ".join((migration.__doc__ or migration.__module__ and _module_doc(migration)).split())
        lines.append(f"- **{number(migration):03d}** `{migration.__name__}`: {doc}")
    return "\n".join(lines)


def _module_doc(migration) -> str:
    import sys

    return sys.modules[migration.__module__].__doc__ or ""
