"""Quantized copies of a GGUF made with the build's own llama-quantize, cached and read back.

A file is cached by (source sha256, type, build): a manifest beside the files (quants.json) names the one that
answers each key, with its sha256, so a second request costs a hash, not a quantization. What the file really
holds is read back from its tensor table: llama-quantize silently replaces a type whose block does not divide a
tensor's rows (Q4_K -> Q5_0 when a row has 128 weights), and a file in which the asked-for type holds none of
the weights is labelled by what it holds ("Q5_0 (asked q4_k_m)"), never by the request.

The source's own type is read first. A quantized source (a Q4_K_M file from a hub) is refused before anything
runs: llama-quantize would refuse it too ("requantizing from type q5_0 is disabled", in its log only), and a copy
made from it measures two quantizations at once. With allow_requantize orch passes --allow-requantize and every
label says what the copy was made from ("q8_0-from-q4_k_m").
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestrator import proc
from orchestrator.errors import QuantizedSource, QuantizeFailed
from orchestrator.hashing import sha256_file
from orchestrator.models import ggml_types
from orchestrator.models.gguf_read import read_header

MANIFEST = "quants.json"
# llama-quantize's type name (lower case) -> the ggml tensor type it puts in most weights.
PRIMARY = {
    "q2_k": "Q2_K",
    "q2_k_s": "Q2_K",
    "q3_k_s": "Q3_K",
    "q3_k_m": "Q3_K",
    "q3_k_l": "Q3_K",
    "q4_k_s": "Q4_K",
    "q4_k_m": "Q4_K",
    "q5_k_s": "Q5_K",
    "q5_k_m": "Q5_K",
    "q6_k": "Q6_K",
    "q4_0": "Q4_0",
    "q4_1": "Q4_1",
    "q5_0": "Q5_0",
    "q5_1": "Q5_1",
    "q8_0": "Q8_0",
    "f16": "F16",
    "bf16": "BF16",
    "f32": "F32",
    "iq4_nl": "IQ4_NL",
    "iq4_xs": "IQ4_XS",
}
UNQUANTIZED = ("F32", "F16", "BF16")  # tensor types that hold weights as they were trained
FALLBACK = re.compile(
    r"^warning: (\S+)\s+- ncols\s+(\d+) not divisible by (\d+) \(required for type\s+(\w+)\)"
    r" -> falling back to\s+(\w+)",
    re.M,
)


@dataclass
class Quant:
    """One quantized file and what it really holds."""

    requested: str  # as asked, lower case: "q4_k_m"
    label: str  # what tables show: the request, or what the file holds when the request was replaced
    path: str
    sha256: str
    size_bytes: int
    source_sha256: str
    build: str
    tensor_types: dict[str, int] = field(default_factory=dict)  # tensor type -> number of tensors
    type_bytes: dict[str, int] = field(default_factory=dict)  # tensor type -> bytes
    fallbacks: list[dict] = field(default_factory=list)  # {"tensor", "wanted", "got"} from llama-quantize
    replaced: bool = False  # the asked-for type holds none of the weights
    requantized_from: str | None = None  # a quantized source's type ("Q4_K_M"), made with --allow-requantize
    cached: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def arm_value(self) -> str:
        """The quant as an arm's name carries it: the type asked, or the type the file got beside it where
        llama-quantize replaced it ("q4_0-asked-q2_k"), and a requantized copy's source ("q8_0-from-q4_k_m")."""
        value = f"{self.label.split(' ')[0].lower()}-asked-{self.requested}" if self.replaced else self.requested
        return f"{value}-from-{self.requantized_from.lower()}" if self.requantized_from else value


def parse_types(text: str) -> list[str]:
    """'q4_k_m,Q8_0' -> ['q4_k_m', 'q8_0']; an unknown name stops before anything is quantized."""
    types = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in PRIMARY]
    if unknown or not types:
        raise QuantizeFailed(
            f"--types {text!r}: {', '.join(unknown) or 'nothing'} is not a type orch knows; "
            f"use a comma-separated list of {', '.join(sorted(PRIMARY))}"
        )
    return list(dict.fromkeys(types))


def source_type(source: Path) -> tuple[str, bool]:
    """(name, quantized) of a GGUF's weights: its general.file_type as llama.cpp names it ("Q4_K_M"), else the
    type holding most weight bytes; quantized when any weight is in a type other than F32, F16 or BF16."""
    head = read_header(source, hash_arrays=False)
    sizes: dict[str, int] = {}
    for t in head.tensors:
        name, block, block_bytes = ggml_types.tensor_type(t.type_id) or (f"type{t.type_id}", 1, 1)
        sizes[name] = sizes.get(name, 0) + t.n_elements // block * block_bytes
    quantized = any(name not in UNQUANTIZED for name in sizes)
    named = ggml_types.file_type_name(head.fields.get("general.file_type"))
    return named or (max(sizes, key=sizes.get) if sizes else "unknown"), quantized


def refuse_quantized(source: Path, allow_requantize: bool, allow_how: str) -> str | None:
    """The source's type where it is quantized (and requantizing is allowed), None where it is not; a quantized
    source without leave stops here, in one line naming both ways out."""
    kind, quantized = source_type(source)
    if quantized and not allow_requantize:
        raise QuantizedSource(
            f"model {source.name} is already quantized ({kind}): a copy made from it would measure "
            f"two quantizations at once; give its F16 or BF16 file, or {allow_how} to quantize it "
            f"again anyway (labels then say q8_0-from-{kind.lower()})"
        )
    return kind if quantized else None


def quantize(
    source: Path,
    types: list[str],
    exe: str,
    build: str,
    out_dir: Path,
    threads: int | None = None,
    source_sha256: str | None = None,
    *,
    allow_requantize: bool = False,
    allow_how: str = "pass --allow-requantize",
) -> list[Quant]:
    """Each type's file in out_dir (made with exe, or the cached one for this source, type and build). A quantized
    source is refused unless allow_requantize (allow_how: how the caller's user says so)."""
    source = Path(source)
    if not source.is_file():
        raise QuantizeFailed(f"model {source} does not exist; pass a GGUF file (f16 or f32 for real quants)")
    requantized_from = refuse_quantized(source, allow_requantize, allow_how)
    out_dir.mkdir(parents=True, exist_ok=True)
    src_sha = source_sha256 or sha256_file(source)
    return [
        _one(source, src_sha, t, exe, build, out_dir, threads or os.cpu_count() or 1, requantized_from) for t in types
    ]


def _one(
    source: Path,
    src_sha: str,
    qtype: str,
    exe: str,
    build: str,
    out_dir: Path,
    threads: int,
    requantized_from: str | None,
) -> Quant:
    key = f"{src_sha}/{qtype}/{build}"
    manifest = _read(out_dir / MANIFEST)
    entry = manifest.get(key)
    if entry and Path(entry["path"]).is_file() and sha256_file(Path(entry["path"])) == entry["sha256"]:
        return Quant(**{**entry, "cached": True})
    path = out_dir / file_name(source, qtype, build)
    tmp = path.with_name(path.name + ".partial")
    log = path.with_suffix(".log")
    allow = ["--allow-requantize"] if requantized_from else []
    res = proc.run([exe, *allow, str(source), str(tmp), qtype.upper(), str(threads)], log=log, timeout=3600)
    if not res.ok or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise QuantizeFailed(f"llama-quantize {qtype} of {source.name} failed ({res.describe()}); log: {log}")
    os.replace(tmp, path)
    quant = read_back(path, qtype, src_sha, build, log.read_text(errors="replace"), requantized_from)
    manifest = _read(out_dir / MANIFEST)  # re-read: only this key changes
    manifest[key] = {k: v for k, v in quant.to_dict().items() if k != "cached"}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return quant


def file_name(source: Path, qtype: str, build: str) -> str:
    """tiny-quality.q4_k_m.0c1e57098-cpu.gguf: what recipes/quant_matrix.j2 renders for a quant."""
    return f"{Path(source).stem}.{qtype}.{build}.gguf"


def read_back(
    path: Path, qtype: str, src_sha: str, build: str, log_text: str, requantized_from: str | None = None
) -> Quant:
    """What the file holds (tensor types from its header) and what llama-quantize replaced (from its log); a copy
    of a quantized source says what it was made from."""
    head = read_header(path, hash_arrays=False)
    counts: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for t in head.tensors:
        name, block, block_bytes = ggml_types.tensor_type(t.type_id) or (f"type{t.type_id}", 1, 1)
        counts[name] = counts.get(name, 0) + 1
        sizes[name] = sizes.get(name, 0) + t.n_elements // block * block_bytes
    fallbacks = fallbacks_in(log_text)
    label, replaced = label_for(qtype, sizes, fallbacks)
    if requantized_from:  # "q8_0-from-q4_k_m", "Q4_0 (asked q2_k), from q4_k_m"
        source = requantized_from.lower()
        label = f"{label}-from-{source}" if label == qtype else f"{label}, from {source}"
    return Quant(
        requested=qtype,
        label=label,
        path=str(path),
        sha256=sha256_file(path),
        size_bytes=path.stat().st_size,
        source_sha256=src_sha,
        build=build,
        tensor_types=counts,
        type_bytes=dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
        fallbacks=fallbacks,
        replaced=replaced,
        requantized_from=requantized_from,
    )


def fallbacks_in(log_text: str) -> list[dict]:
    """llama-quantize's 'falling back to' warnings: the tensors that did not get the type asked for."""
    return [
        {"tensor": m[1], "ncols": int(m[2]), "wanted": m[4].upper(), "got": m[5].upper()}
        for m in FALLBACK.finditer(log_text)
    ]


def label_for(qtype: str, type_bytes: dict[str, int], fallbacks: list[dict] = ()) -> tuple[str, bool]:
    """(label, replaced): the request when it was applied as asked; the type holding most weights when the asked
    type holds none ("Q5_0 (asked q4_k_m)"); the request with its fallbacks counted when only some fell back."""
    got: dict[str, int] = {}
    for f in fallbacks:
        got[f["got"]] = got.get(f["got"], 0) + 1
    if PRIMARY[qtype] not in type_bytes:
        # What most replaced tensors became (the output matrix alone may be the largest, in its own type).
        weights = got or {k: v for k, v in type_bytes.items() if k != "F32"} or type_bytes
        return f"{max(weights, key=weights.get)} (asked {qtype})", True
    if got:
        return f"{qtype} ({len(fallbacks)} tensors fell back, most to {max(got, key=got.get)})", False
    return qtype, False


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
