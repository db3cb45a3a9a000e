"""Tiny random-weight llama GGUF models for the demo and the tests: a target, a draft that agrees
with it part of the time, and a draft whose vocabulary llama.cpp refuses.

A draft that never agrees (independent weights) or always agrees (a copy) would hide bugs in
acceptance accounting, so the draft is the target's first layers with the same embeddings and output:
the residual stream is dominated by the token embedding, and the target's extra layers, kept small
by `layer_scale`, move its greedy choice away from the draft's some of the time.

Measured with the real llama-speculative-simple (0c1e57098, recipe A flags: draft n-max 16, n-min 5,
-n 128, greedy) over six prompts: acceptance 38-66% at the default p-min and 56-85% at p-min 0.9.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import gguf
import numpy as np

from orchestrator.errors import ModelError
from orchestrator.hashing import sha256_file, sha256_text

RECIPE_VERSION = 1  # bump when the weights or metadata written for the same spec change
RECIPE_KEY = "orch.tiny.recipe"  # also in the file itself, for provenance
MANIFEST = "tiny-models.json"
SPM_VOCAB = "ggml-vocab-llama-spm.gguf"
GPT2_VOCAB = "ggml-vocab-gpt-2.gguf"


@dataclass(frozen=True)
class TinySpec:
    n_embd: int = 128
    n_head: int = 4
    n_ff: int = 256
    n_layers: int = 6
    # How far the target's extra layers move it from the draft: at p-min 0, 0.02 gave 52-61% acceptance,
    # 0.03 27-41%, 0.05 4-9%.
    layer_scale: float = 0.025
    # Greedy choices ignore it; it sets the draft's confidence. At 1.0 p-min 0.9 stops nearly every draft
    # (0-9 tokens drafted per run); at 2-4 only tokens the target agrees with pass (up to 100%); at 8 the
    # draft is confidently wrong often enough for p-min 0.9 to land at 56-85%.
    output_scale: float = 8.0
    context_length: int = 4096


TARGET = TinySpec()
DRAFT = TinySpec(n_layers=2)
# For quantization and KV-cache matrices: hidden and feed-forward sizes multiples of 256 (the K-quants' block),
# so q2_K...q6_K are really applied instead of silently replaced by Q4_0/Q5_0/Q8_0; context room for 8K depth.
# A small output scale keeps their perplexity finite and printable (about 1e5 for a 32000-token vocabulary; at
# the target's 8.0 it is 1e235 and every quant's ratio to it is noise).
QUALITY = TinySpec(n_embd=256, n_ff=512, n_layers=4, output_scale=0.1, context_length=16384)
QUALITY_DRAFT = TinySpec(n_embd=256, n_ff=512, n_layers=1, output_scale=0.1, context_length=16384)
FILES = {  # role -> (file name, vocabulary file, spec)
    "target": ("tiny-target.gguf", SPM_VOCAB, TARGET),
    "draft": ("tiny-draft.gguf", SPM_VOCAB, DRAFT),
    "draft_gpt2": ("tiny-draft-gpt2.gguf", GPT2_VOCAB, DRAFT),  # llama.cpp refuses it with the target
    "quality": ("tiny-quality.gguf", SPM_VOCAB, QUALITY),
    "quality_draft": ("tiny-quality-draft.gguf", SPM_VOCAB, QUALITY_DRAFT),
}


def find_vocab_dir(src_tree: Path) -> Path:
    """The `models/` folder of a llama.cpp source tree, checked to hold the vocabularies tiny models use."""
    vocab_dir = Path(src_tree) / "models"
    missing = [name for name in (SPM_VOCAB, GPT2_VOCAB) if not (vocab_dir / name).is_file()]
    if missing:
        raise ModelError(
            f"{vocab_dir} lacks {', '.join(missing)}; "
            f"point at a llama.cpp source tree (its models/ folder holds the vocab-only GGUFs)"
        )
    return vocab_dir


class VocabCache:
    """The vocab-only GGUFs of a llama.cpp tree, each parsed once (parsing takes a second or two)."""

    def __init__(self, vocab_dir: Path):
        self.vocab_dir = Path(vocab_dir)
        self._readers: dict[str, gguf.GGUFReader] = {}

    def path(self, name: str) -> Path:
        path = self.vocab_dir / name
        if not path.is_file():
            raise ModelError(f"vocabulary {path} not found; pass a llama.cpp tree's models/ folder")
        return path

    def reader(self, name: str) -> gguf.GGUFReader:
        if name not in self._readers:
            self._readers[name] = gguf.GGUFReader(self.path(name), "r")
        return self._readers[name]

    def n_vocab(self, name: str) -> int:
        return len(self.reader(name).get_field("tokenizer.ggml.tokens").data)


def make_tiny_models(
    out_dir: Path, vocab_dir: Path, seed: int = 0, vocabs: VocabCache | None = None
) -> dict[str, Path]:
    """Write the tiny target and drafts into out_dir, skipping files already made by the same recipe.

    Returns {"target": ..., "draft": ..., "draft_gpt2": ...}. `vocabs` shares parsed vocabularies between calls.
    """
    vocabs = vocabs or VocabCache(vocab_dir)
    paths = {}
    for role, (file_name, vocab_name, spec) in FILES.items():
        recipe = recipe_id(vocabs.path(vocab_name), spec, seed)

        def write(tmp, name=Path(file_name).stem, vocab=vocab_name, spec=spec, recipe=recipe):
            _write_model(tmp, name, vocabs.reader(vocab), spec, seed, recipe)

        paths[role] = make_file(Path(out_dir) / file_name, recipe, write)
    return paths


def make_file(path: Path, recipe: str, write) -> Path:
    """Write path with write(tmp_path) unless the manifest beside it says this recipe made it and it is unchanged.

    The file appears whole or not at all (written to a temporary name, then renamed).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    manifest_path = path.parent / MANIFEST
    manifest = _read_manifest(manifest_path)
    if _is_current(path, manifest.get(path.name), recipe):
        return path
    tmp = path.with_name(path.name + ".partial")
    write(tmp)
    os.replace(tmp, path)  # a crash mid-write never leaves a file that looks finished
    manifest = _read_manifest(manifest_path)  # re-read: only this entry changes
    manifest[path.name] = {"recipe": recipe, "sha256": sha256_file(path)}
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return path


def recipe_id(vocab_path: Path, spec, seed: int, version: int = RECIPE_VERSION, **extra) -> str:
    """A short hash of everything that decides a file's bytes (spec is a dataclass)."""
    # The vocabulary's bytes are part of the recipe: a different llama.cpp tree may ship a different one.
    text = json.dumps(
        {"v": version, "seed": seed, "spec": asdict(spec), "vocab": sha256_file(vocab_path), **extra}, sort_keys=True
    )
    return sha256_text(text)[:16]


def _read_manifest(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _is_current(path: Path, entry: dict | None, recipe: str) -> bool:
    """Made by this recipe and unchanged since (a GGUF reader would take seconds to parse the vocabulary)."""
    return (
        entry is not None
        and entry.get("recipe") == recipe
        and path.is_file()
        and sha256_file(path) == entry.get("sha256")
    )


def _write_model(path: Path, name: str, vocab: gguf.GGUFReader, spec: TinySpec, seed: int, recipe: str) -> None:
    n_vocab = len(vocab.get_field("tokenizer.ggml.tokens").data)
    writer = gguf.GGUFWriter(path, "llama")
    _add_hparams(writer, spec, n_vocab, name, recipe)
    copy_tokenizer(writer, vocab)
    write_tensors(writer, llama_tensors(spec, n_vocab, seed))


def write_tensors(writer: gguf.GGUFWriter, tensors) -> None:
    """Add (name, array) pairs and write the whole file."""
    for name, array in tensors:
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _add_hparams(writer: gguf.GGUFWriter, spec: TinySpec, n_vocab: int, name: str, recipe: str) -> None:
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_context_length(spec.context_length)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layers)
    writer.add_feed_forward_length(spec.n_ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head)
    writer.add_rope_dimension_count(spec.n_embd // spec.n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_string(RECIPE_KEY, recipe)


def copy_tokenizer(writer: gguf.GGUFWriter, vocab: gguf.GGUFReader) -> None:
    """Every tokenizer.* key of the vocab-only GGUF, with its original value types."""
    for key, field in vocab.fields.items():
        if not key.startswith("tokenizer."):
            continue
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type)


def llama_tensors(spec: TinySpec, n_vocab: int, seed: int):
    """(name, array) pairs in llama.cpp's layout; numpy shapes are the reverse of ggml's ne[]."""
    # Embeddings and output depend on (seed, vocab size) only and layer i on (seed, i) only,
    # so a draft with fewer layers is exactly the target's first layers.
    rng = np.random.default_rng([seed, n_vocab])
    yield "token_embd.weight", f16(rng.standard_normal((n_vocab, spec.n_embd)))
    # A separate output matrix: tied embeddings would make every model predict its input token.
    yield "output.weight", f16(rng.standard_normal((n_vocab, spec.n_embd)) * spec.output_scale)
    yield "output_norm.weight", np.ones(spec.n_embd, dtype=np.float32)
    for i in range(spec.n_layers):
        yield from llama_layer(spec, i, np.random.default_rng([seed, n_vocab, i]))


def llama_layer(spec: TinySpec, i: int, rng: np.random.Generator):
    d, ff, s = spec.n_embd, spec.n_ff, spec.layer_scale
    shapes = {
        "attn_q": (d, d),
        "attn_k": (d, d),
        "attn_v": (d, d),
        "attn_output": (d, d),
        "ffn_gate": (ff, d),
        "ffn_up": (ff, d),
        "ffn_down": (d, ff),
    }
    yield f"blk.{i}.attn_norm.weight", np.ones(d, dtype=np.float32)
    yield f"blk.{i}.ffn_norm.weight", np.ones(d, dtype=np.float32)
    for name, shape in shapes.items():
        yield f"blk.{i}.{name}.weight", f16(rng.standard_normal(shape) * s)


def f16(array: np.ndarray) -> np.ndarray:
    # 2-D weights in F16 halve the file (the embedding and output matrices are most of it); norms stay F32.
    return array.astype(np.float16)
