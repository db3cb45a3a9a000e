"""`orch models inspect`: what a GGUF file holds (architecture, vocabulary, tensor types), recorded in the results file."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import store
from orchestrator.cli.group import db_option, opened_db
from orchestrator.cli.models import models_group
from orchestrator.cli.output import echo_json_or_text
from orchestrator.models import gguf_info


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

    info = gguf_info.inspect(path).to_dict()
    with opened_db(db, write=True) as con:
        store.record_model(con, info)  # runs join models on sha256
    echo_json_or_text(info, as_json, lambda: "\n".join(f"{key:>18}: {value}" for key, value in info.items()))
