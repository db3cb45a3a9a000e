"""`orch models quantize`: a GGUF quantized with a build's llama-quantize into the types asked for (cached), each
file's real tensor types read back."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator import config, disk, store
from orchestrator.build.builder import tool_path
from orchestrator.cli.group import db_option, opened_db
from orchestrator.cli.models import models_group
from orchestrator.cli.output import echo_json_or_text
from orchestrator.models import gguf_info, quantize


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

    types = quantize.parse_types(types_text)
    if Path(model).is_file():  # before a build is looked for (or tools added to it): a quantized source stops here
        quantize.refuse_quantized(Path(model), allow_requantize, "pass --allow-requantize")
    build, exe = tool_path(build_ref, "llama-quantize")
    folder = out or config.models_dir() / "quants"
    with disk.writing(folder):  # a quant cut short (a full disk) leaves no part of it
        quants = quantize.quantize(model, types, exe, build.name, folder, allow_requantize=allow_requantize)
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
