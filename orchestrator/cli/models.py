"""`orch models tiny` and `orch models inspect`: GGUF files."""

from __future__ import annotations

import json
from pathlib import Path

import click

from orchestrator.cli.group import db_option, main, opened_db


@main.group("models")
def models_group():
    """Make and inspect GGUF models."""


@models_group.command("tiny")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: $ORCH_MODELS or ./models).")
@click.option("--build", "build_ref", default=None, help="Build whose source tree provides the vocabularies.")
def models_tiny(out, build_ref):
    """Write tiny random-weight GGUF models, one role per line.

    A llama target and a draft made of its first layers (and a draft with another vocabulary, for mismatch
    tests); a qwen35 target with one MTP block (--spec-type draft-mtp); EAGLE3, DFlash and DSpark drafts for
    the llama target. Each draft or head reuses its target's weights, so it agrees with the target part of
    the time. Files already made by the same recipe are kept.

    Example: orch models tiny --out models
    """
    from orchestrator import config
    from orchestrator.build.builder import find_build
    from orchestrator.models import tiny, tiny_methods

    build = find_build(build_ref)
    out = out or config.models_dir()
    vocabs = tiny.VocabCache(tiny.find_vocab_dir(Path(build["src_dir"])))
    paths = {**tiny.make_tiny_models(out, vocabs.vocab_dir, vocabs=vocabs),
             **tiny_methods.make_method_models(out, vocabs.vocab_dir, vocabs=vocabs)}
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
    from orchestrator import store
    from orchestrator.models import gguf_info

    info = gguf_info.inspect(path).to_dict()
    with opened_db(db, write=True) as con:
        store.record_model(con, info)  # runs join models on sha256
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key, value in info.items():
        click.echo(f"{key:>18}: {value}")
