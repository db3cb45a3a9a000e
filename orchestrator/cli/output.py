"""What commands with `--json` print: the value as JSON, else their own text."""

from __future__ import annotations

import json
from collections.abc import Callable

import click


def echo_json_or_text(value, as_json: bool, text: Callable[[], str]) -> None:
    """`value` as indented JSON (what JSON cannot hold, such as a date or a path, as its str) under --json; else
    `text()`, made only then (a table may cost more than the value)."""
    click.echo(json.dumps(value, indent=2, default=str) if as_json else text())
