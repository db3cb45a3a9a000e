"""Memory pre-flight: will the target and the draft, with their KV caches, fit in free GPU memory?

Estimate per model: weights × offloaded fraction + KV cache × offloaded fraction, where
    KV = context × layers × KV heads × (key length × K-type bytes + value length × V-type bytes)
(the familiar ctx × layers × heads × head size × 2 × bytes when K and V match). A model with -ngl N
keeps min(N, layers) of its layers (and their KV) on the GPU. Weights count in full, token embedding
included, and one reserve covers the CUDA context and compute buffers: an upper-side estimate, meant
to warn before launch, not to predict llama.cpp's allocator to the byte.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from orchestrator.models.ggml_types import tensor_type_by_name
from orchestrator.models.gguf_info import ModelInfo
from orchestrator.recipe import argv as flags
from orchestrator.recipe.argv import flag_value
from orchestrator.tables import gib

GIB = 2**30
# CUDA context (~0.3-0.5 GiB) plus llama.cpp's compute buffers (logits alone: ubatch × vocab × 4 bytes).
DEFAULT_RESERVE_BYTES = 1 * GIB
DEFAULT_CTX = 4096  # llama.cpp's common default for -c


@dataclass
class ModelEstimate:
    """One model's share: its layers, weights and KV cache, and how much of them goes to the GPU."""

    role: str  # "target" or "draft"
    path: str
    n_layers: int
    gpu_layers: int
    weight_bytes: int
    kv_bytes: int
    gpu_bytes: int  # the offloaded share of weights and KV
    cpu_bytes: int


@dataclass
class MemFit:
    """An arm's memory estimate (PreparedArm.memfit); stored as to_dict() in the runs.memfit JSON column."""

    models: list[ModelEstimate]
    reserve_bytes: int
    gpu_total_bytes: int  # models on the GPU plus the reserve
    free_bytes: int | None  # None: free GPU memory unknown (no NVML and none passed in)
    fits: bool | None
    warning: str | None

    def to_dict(self) -> dict:
        return asdict(self)


def cache_type_bytes(cache_type: str) -> float:
    """Bytes per element of a KV cache type: f16 -> 2, q8_0 -> 34/32, q4_0 -> 18/32."""
    known = tensor_type_by_name(cache_type)
    if known is None:
        raise ValueError(
            f"unknown KV cache type {cache_type!r}; llama.cpp takes f32, f16, bf16, q8_0, "
            f"q4_0, q4_1, iq4_nl, q5_0, q5_1"
        )
    _, block, size = known
    return size / block


def kv_cache_bytes(info: ModelInfo, ctx: int, type_k: str = "f16", type_v: str = "f16") -> int:
    """The whole KV cache of info at context ctx; 0 when the GGUF lacks the attention shape."""
    if not (info.n_layers and info.n_head_kv and info.key_length and info.value_length):
        return 0
    per_token_layer = info.n_head_kv * (
        info.key_length * cache_type_bytes(type_k) + info.value_length * cache_type_bytes(type_v)
    )
    return round(ctx * info.n_layers * per_token_layer)


def model_estimate(
    info: ModelInfo, role: str, *, ctx: int, ngl: int | None, type_k: str = "f16", type_v: str = "f16"
) -> ModelEstimate:
    """ngl None or negative means every layer, as -ngl 99/all does."""
    layers = info.n_layers or 1
    gpu_layers = layers if ngl is None or ngl < 0 else min(ngl, layers)
    weights = info.weight_bytes if info.weight_bytes is not None else info.size_bytes
    kv = kv_cache_bytes(info, ctx, type_k, type_v)
    on_gpu = round((weights + kv) * gpu_layers / layers)
    return ModelEstimate(
        role=role,
        path=info.path,
        n_layers=layers,
        gpu_layers=gpu_layers,
        weight_bytes=weights,
        kv_bytes=kv,
        gpu_bytes=on_gpu,
        cpu_bytes=weights + kv - on_gpu,
    )


def fit(models: list[ModelEstimate], free_bytes: int | None, reserve_bytes: int = DEFAULT_RESERVE_BYTES) -> MemFit:
    """Compare what the models put on the GPU (plus the reserve) with free memory, and say what to do."""
    on_gpu = sum(m.gpu_bytes for m in models)
    total = on_gpu + reserve_bytes if on_gpu else 0  # nothing offloaded: no CUDA context to reserve for
    fits = None if free_bytes is None else total <= free_bytes
    warning = _warning(models, total, free_bytes, reserve_bytes) if fits is False else None
    return MemFit(
        models=models,
        reserve_bytes=reserve_bytes if on_gpu else 0,
        gpu_total_bytes=total,
        free_bytes=free_bytes,
        fits=fits,
        warning=warning,
    )


def target_layers_that_fit(models: list[ModelEstimate], free_bytes: int, reserve_bytes: int) -> int:
    """How many target layers fit beside everything else on the GPU."""
    target = next(m for m in models if m.role == "target")
    others = sum(m.gpu_bytes for m in models if m is not target)
    per_layer = (target.weight_bytes + target.kv_bytes) / target.n_layers
    room = free_bytes - reserve_bytes - others
    return max(0, min(target.n_layers, int(room // per_layer))) if per_layer else target.n_layers


def from_argv(
    argv: list[str],
    target: ModelInfo,
    draft: ModelInfo | None,
    *,
    free_bytes: int | None = None,
    reserve_bytes: int = DEFAULT_RESERVE_BYTES,
) -> MemFit:
    """Estimate for a llama.cpp command line against free_bytes of GPU memory (None: unknown or no GPU used)."""
    ctx = _int(flag_value(argv, flags.CTX), DEFAULT_CTX) or target.context_length or DEFAULT_CTX
    models = [
        model_estimate(
            target,
            "target",
            ctx=ctx,
            ngl=_layers(flag_value(argv, flags.GPU_LAYERS)),
            type_k=flag_value(argv, flags.CACHE_TYPE_K) or "f16",
            type_v=flag_value(argv, flags.CACHE_TYPE_V) or "f16",
        )
    ]
    if draft is not None:
        ctx_draft = _int(flag_value(argv, flags.CTX_DRAFT), 0) or ctx  # 0: the target's
        models.append(
            model_estimate(
                draft,
                "draft",
                ctx=ctx_draft,
                ngl=_layers(flag_value(argv, flags.GPU_LAYERS_DRAFT)),
                type_k=flag_value(argv, flags.CACHE_TYPE_K_DRAFT) or "f16",
                type_v=flag_value(argv, flags.CACHE_TYPE_V_DRAFT) or "f16",
            )
        )
    return fit(models, free_bytes, reserve_bytes)


def _warning(models: list[ModelEstimate], total: int, free: int, reserve: int) -> str:
    parts = ", ".join(
        f"{m.role} {gib(m.gpu_bytes, 2)} (weights {gib(m.weight_bytes, 2)} + KV {gib(m.kv_bytes, 2)}, "
        f"{m.gpu_layers}/{m.n_layers} layers)"
        for m in models
    )
    text = (
        f"the models need {gib(total, 2)} on the GPU ({parts}, reserve {gib(reserve, 2)}) but only {gib(free, 2)} "
        f"is free: llama.cpp will fail to allocate or keep layers on the CPU and decode slower"
    )
    if any(m.role == "target" for m in models) and any(m.role == "draft" for m in models):
        k = target_layers_that_fit(models, free, reserve)
        n = next(m.n_layers for m in models if m.role == "target")
        text += f"; with the draft on the GPU only {k} of {n} target layers fit"
    return (
        text + "; lower -c, quantise the KV cache (-ctk/-ctv q8_0), offload fewer draft layers or use a smaller draft"
    )


def _layers(value: str | None) -> int | None:
    if value is None or value in ("all", "auto"):
        return None  # current llama.cpp offloads every layer by default when built with a GPU backend
    return int(value)


def _int(value: str | None, default: int) -> int:
    return int(value) if value is not None else default
