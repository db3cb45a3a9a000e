"""GGUF metadata: what a model is, read from its header (gguf_read).

The reader memory-maps the file, so inspecting a 40 GB model costs only its header (a vocabulary is walked and
hashed, never decoded); the sha256 is the one full read, streamed. Nothing is cached: a model file can be
replaced under the same path.

`decode_bytes` is what one decode step (one token through the model) must read from memory, the
denominator of the roofline bound:
- every tensor's data, except
- `token_embd.weight` when the model has its own `output.weight`: the lookup reads one row per
  token (and llama.cpp keeps it in host memory); a tied embedding is the output matrix and counts;
- expert tensors (names containing `_exps`) count expert_used_count / expert_count of their bytes:
  each token routes to that many experts. Shared experts (`_shexp`) and the router count in full.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.errors import ModelError
from orchestrator.hashing import sha256_file
from orchestrator.message_lines import first_line
from orchestrator.models import ggml_types
from orchestrator.models.gguf_read import ArraySpan, GGUFFormatError, Header, read_header

TOKENS = "tokenizer.ggml.tokens"


@dataclass
class ModelInfo:
    path: str
    sha256: str
    size_bytes: int
    architecture: str
    name: str | None
    parameters: int
    file_type: str | None
    vocab_type: str | None
    vocab_size: int | None
    bos_id: int | None
    eos_id: int | None
    n_layers: int | None
    n_embd: int | None
    context_length: int | None
    expert_count: int | None
    expert_used_count: int | None
    # Added for issue 6 with defaults, so hand-made ModelInfo(...) calls stay valid.
    n_head: int | None = None
    n_head_kv: int | None = None  # the largest when the GGUF gives one per layer
    key_length: int | None = None  # per head; n_embd / n_head when the GGUF omits it
    value_length: int | None = None
    quant_mix: dict[str, int] = field(default_factory=dict)  # tensor type -> bytes, largest first
    weight_bytes: int | None = None  # all tensor data
    expert_bytes: int | None = None  # tensor data in `_exps` tensors
    decode_bytes: int | None = None  # see the module docstring
    # sha256 of the token strings as stored (tokenizer.ggml.tokens): equal hashes, equal vocabularies (issue 13).
    vocab_sha256: str | None = None
    # Speculation heads (issue 14): MTP blocks in a target; the target layers an EAGLE3/DFlash draft reads, and the
    # target hidden size an EAGLE3 draft was trained on (pre-flight checks these against the spec type).
    nextn_layers: int | None = None
    target_layers: list[int] | None = None
    target_hidden_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect(path: str | Path) -> ModelInfo:
    """Read one GGUF file's metadata; ModelError when it is missing or not a GGUF."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"model file {path} does not exist (check the path)")
    if not path.is_file():
        raise ModelError(f"model path {path} is not a regular file; pass a .gguf file")
    head = _open(path)
    fields = head.fields
    arch = fields.get("general.architecture")
    if not isinstance(arch, str):
        raise ModelError(f"{path} is a GGUF without general.architecture; it cannot be loaded as a model")
    tokens = head.arrays.get(TOKENS)
    sizes = {t.name: _tensor_bytes(path, t) for t in head.tensors}
    experts = (fields.get(f"{arch}.expert_count"), fields.get(f"{arch}.expert_used_count"))
    return ModelInfo(
        path=str(path),
        sha256=sha256_file(path),
        size_bytes=path.stat().st_size,
        architecture=arch,
        name=fields.get("general.name"),
        parameters=sum(t.n_elements for t in head.tensors),
        file_type=ggml_types.file_type_name(fields.get("general.file_type")),
        vocab_type=fields.get("tokenizer.ggml.model"),
        vocab_size=tokens.count if tokens is not None else None,
        bos_id=fields.get("tokenizer.ggml.bos_token_id"),
        eos_id=fields.get("tokenizer.ggml.eos_token_id"),
        n_layers=fields.get(f"{arch}.block_count"),
        n_embd=fields.get(f"{arch}.embedding_length"),
        context_length=fields.get(f"{arch}.context_length"),
        expert_count=experts[0],
        expert_used_count=experts[1],
        **_attention(fields, arch),
        quant_mix=quant_mix(sizes.values()),
        weight_bytes=sum(n for _, n in sizes.values()),
        expert_bytes=sum(n for name, (_, n) in sizes.items() if is_expert_tensor(name)),
        decode_bytes=decode_bytes({name: n for name, (_, n) in sizes.items()}, *experts),
        vocab_sha256=tokens.sha256 if tokens is not None else None,
        nextn_layers=fields.get(f"{arch}.nextn_predict_layers"),
        target_layers=fields.get(f"{arch}.target_layers"),
        target_hidden_size=fields.get(f"{arch}.target_hidden_size"),
    )


def token_span(path: str | Path) -> ArraySpan | None:
    """Where a model's token strings lie in its file (for the token-by-token comparison), None without a vocabulary."""
    return _open(Path(path), hash_arrays=False).arrays.get(TOKENS)


def quant_mix(tensors) -> dict[str, int]:
    """(type name, bytes) pairs -> bytes per type, largest first: {"Q4_K": 1234, "F32": 56}."""
    mix: dict[str, int] = {}
    for type_name, n in tensors:
        mix[type_name] = mix.get(type_name, 0) + n
    return dict(sorted(mix.items(), key=lambda kv: (-kv[1], kv[0])))


def is_expert_tensor(name: str) -> bool:
    # llama.cpp names routed experts blk.N.ffn_{up,gate,down,gate_up}_exps; shared ones end in _shexp.
    return "_exps" in name


def decode_bytes(tensor_bytes: dict[str, int], expert_count: int | None, expert_used_count: int | None) -> int:
    """Bytes one decode step reads, by the rule in the module docstring."""
    tied = "output.weight" not in tensor_bytes
    total = 0.0
    for name, n in tensor_bytes.items():
        if name == "token_embd.weight" and not tied:
            continue
        if is_expert_tensor(name) and expert_count and expert_used_count:
            total += n * min(expert_used_count, expert_count) / expert_count
        else:
            total += n
    return round(total)


def _open(path: Path, hash_arrays: bool = True) -> Header:
    try:
        return read_header(path, hash_arrays=hash_arrays)
    except (GGUFFormatError, OSError) as exc:
        raise ModelError(
            f"{path} is not a readable GGUF file ({first_line(exc)}); pass a .gguf model, not a safetensors/bin file"
        ) from exc


def _tensor_bytes(path: Path, tensor) -> tuple[str, int]:
    """(type name, bytes of data) of one tensor."""
    known = ggml_types.tensor_type(tensor.type_id)
    if known is None:
        raise ModelError(
            f"{path}: tensor {tensor.name} has ggml type {tensor.type_id}, which neither orch nor the "
            f"installed gguf package knows; upgrade gguf (pip install -U gguf)"
        )
    name, block, block_bytes = known
    return name, tensor.n_elements * block_bytes // block


def _attention(fields: dict[str, Any], arch: str) -> dict[str, int | None]:
    n_head = _largest(fields.get(f"{arch}.attention.head_count"))
    n_head_kv = _largest(fields.get(f"{arch}.attention.head_count_kv"))
    n_embd = fields.get(f"{arch}.embedding_length")
    default = n_embd // n_head if n_embd and n_head else None
    key = fields.get(f"{arch}.attention.key_length")
    value = fields.get(f"{arch}.attention.value_length")
    # llama.cpp: head_count_kv defaults to head_count (no grouped-query attention).
    return {
        "n_head": n_head,
        "n_head_kv": n_head_kv if n_head_kv is not None else n_head,
        "key_length": key if key is not None else default,
        "value_length": value if value is not None else default,
    }


def _largest(value: Any) -> int | None:
    """Per-layer arrays (some architectures vary heads by layer) -> their largest, for an upper bound."""
    if isinstance(value, list):
        return max(value) if value else None
    return value
