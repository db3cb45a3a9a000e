"""GGUF metadata through llama.cpp's own `gguf` package: what a model is, and whether two can pair.

The reader memory-maps the file, so inspecting a 40 GB model costs only its header; the sha256 is the
one full read, streamed. Nothing is cached: a model file can be replaced under the same path.

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

import gguf

from orchestrator.errors import ModelError
from orchestrator.hashing import sha256_file

# llama.cpp common/speculative.cpp: SPEC_VOCAB_MAX_SIZE_DIFFERENCE.
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect(path: str | Path) -> ModelInfo:
    """Read one GGUF file's metadata; ModelError when it is missing or not a GGUF."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"model file {path} does not exist (check the path)")
    if not path.is_file():
        raise ModelError(f"model path {path} is not a regular file; pass a .gguf file")
    reader = _open(path)
    arch = _scalar(reader, "general.architecture")
    if not isinstance(arch, str):
        raise ModelError(f"{path} is a GGUF without general.architecture; it cannot be loaded as a model")
    tokens = reader.get_field("tokenizer.ggml.tokens")
    sizes = {t.name: (t.tensor_type.name, int(t.n_bytes)) for t in reader.tensors}
    heads = _attention(reader, arch)
    experts = (_scalar(reader, f"{arch}.expert_count"), _scalar(reader, f"{arch}.expert_used_count"))
    return ModelInfo(
        path=str(path),
        sha256=sha256_file(path),
        size_bytes=path.stat().st_size,
        architecture=arch,
        name=_scalar(reader, "general.name"),
        parameters=sum(int(t.n_elements) for t in reader.tensors),
        file_type=file_type_name(_scalar(reader, "general.file_type")),
        vocab_type=_scalar(reader, "tokenizer.ggml.model"),
        # len(data) counts the array's elements without decoding 150k token strings.
        vocab_size=len(tokens.data) if tokens is not None else None,
        bos_id=_scalar(reader, "tokenizer.ggml.bos_token_id"),
        eos_id=_scalar(reader, "tokenizer.ggml.eos_token_id"),
        n_layers=_scalar(reader, f"{arch}.block_count"),
        n_embd=_scalar(reader, f"{arch}.embedding_length"),
        context_length=_scalar(reader, f"{arch}.context_length"),
        expert_count=experts[0],
        expert_used_count=experts[1],
        **heads,
        quant_mix=quant_mix(sizes.values()),
        weight_bytes=sum(n for _, n in sizes.values()),
        expert_bytes=sum(n for name, (_, n) in sizes.items() if is_expert_tensor(name)),
        decode_bytes=decode_bytes({name: n for name, (_, n) in sizes.items()}, *experts),
    )


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


def vocab_differences(target: ModelInfo, draft: ModelInfo) -> list[str]:
    """Why llama.cpp would refuse this target/draft pair (common_speculative_are_compatible); [] if it would not.

    llama.cpp also compares every token's text; that needs the token lists, which ModelInfo does not keep.
    """
    reasons = []
    if target.vocab_type != draft.vocab_type:
        reasons.append(f"vocab type {target.vocab_type} vs {draft.vocab_type}")
    if target.vocab_size is not None and draft.vocab_size is not None:
        diff = abs(target.vocab_size - draft.vocab_size)
        if diff > SPEC_VOCAB_MAX_SIZE_DIFFERENCE:
            reasons.append(f"vocab size {target.vocab_size} vs {draft.vocab_size} "
                           f"(differ by {diff}, llama.cpp allows {SPEC_VOCAB_MAX_SIZE_DIFFERENCE})")
    if target.bos_id != draft.bos_id:
        reasons.append(f"bos token id {target.bos_id} vs {draft.bos_id}")
    if target.eos_id != draft.eos_id:
        reasons.append(f"eos token id {target.eos_id} vs {draft.eos_id}")
    return reasons


def file_type_name(value: int | None) -> str | None:
    """general.file_type as llama.cpp names quantisations: 1 -> "F16", 15 -> "Q4_K_M"."""
    if value is None:
        return None
    try:
        member = gguf.LlamaFileType(value)
    except ValueError:
        return f"unknown ({value})"
    return member.name.removeprefix("MOSTLY_").removeprefix("ALL_")


def _open(path: Path) -> gguf.GGUFReader:
    try:
        return gguf.GGUFReader(path, "r")
    # The reader signals a bad magic, an empty or truncated file with assorted built-in errors.
    except (ValueError, IndexError, KeyError, OSError, UnicodeDecodeError, OverflowError) as exc:
        raise ModelError(f"{path} is not a readable GGUF file ({_first_line(exc)}); "
                         f"pass a .gguf model, not a safetensors/bin file") from exc


def _attention(reader: gguf.GGUFReader, arch: str) -> dict[str, int | None]:
    n_head = _largest(_scalar(reader, f"{arch}.attention.head_count"))
    n_head_kv = _largest(_scalar(reader, f"{arch}.attention.head_count_kv"))
    n_embd = _scalar(reader, f"{arch}.embedding_length")
    default = n_embd // n_head if n_embd and n_head else None
    key = _scalar(reader, f"{arch}.attention.key_length")
    value = _scalar(reader, f"{arch}.attention.value_length")
    # llama.cpp: head_count_kv defaults to head_count (no grouped-query attention).
    return {"n_head": n_head, "n_head_kv": n_head_kv if n_head_kv is not None else n_head,
            "key_length": key if key is not None else default,
            "value_length": value if value is not None else default}


def _largest(value: Any) -> int | None:
    """Per-layer arrays (some architectures vary heads by layer) -> their largest, for an upper bound."""
    if isinstance(value, list):
        return max(value) if value else None
    return value


def _scalar(reader: gguf.GGUFReader, key: str) -> Any:
    """A field's value as a plain Python str/int/float/bool, or None when absent."""
    field = reader.get_field(key)
    if field is None:
        return None
    value = field.contents()
    return value.item() if hasattr(value, "item") else value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
