"""`orch models tiny`: tiny random-weight GGUF models (a llama target and its drafts, a qwen35 MTP target, EAGLE3,
DFlash and DSpark heads), kept where the same recipe made them."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import config, disk
from orchestrator.build.on_disk import find_build
from orchestrator.cli.models import models_group
from orchestrator.models import tiny, tiny_methods


@models_group.command("tiny")
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: $ORCH_MODELS or ./models).",
)
@click.option("--build", "build_ref", default=None, help="Build whose source tree provides the vocabularies.")
def models_tiny(out, build_ref):
    """Write tiny random-weight GGUF models, one role per line.

    A llama target and a draft made of its first layers (and a draft with another vocabulary, for mismatch
    tests); a qwen35 target with one MTP block (--spec-type draft-mtp); EAGLE3, DFlash and DSpark drafts for
    the llama target. Each draft or head reuses its target's weights, so it agrees with the target part of
    the time. Files already made by the same recipe are kept.

    Example: orch models tiny --out models
    """

    build = find_build(build_ref)
    out = out or config.models_dir()
    vocabs = tiny.VocabCache(tiny.find_vocab_dir(Path(build.src_dir or build.dir)))
    with disk.writing(out):  # cut short (a full disk), it leaves no file of this call's, partial or whole
        paths = {
            **tiny.make_tiny_models(out, vocabs.vocab_dir, vocabs=vocabs),
            **tiny_methods.make_method_models(out, vocabs.vocab_dir, vocabs=vocabs),
        }
    for role, path in paths.items():
        click.echo(f"{role}\t{path}")
