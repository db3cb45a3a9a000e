"""Memory pre-flight: KV cache sizes, offload split and the warning, against hand-computed numbers."""

import json

import pytest
from nvml_fake import GIB, fake_nvml, no_nvml  # noqa: F401 (fixtures)

from orchestrator.machine import gpu
from orchestrator.models import memfit
from orchestrator.models.gguf_info import ModelInfo

MIB = 2**20


def model(path="t.gguf", *, layers, kv_heads, head=128, weights, ctx_train=32768):
    return ModelInfo(
        path=path,
        sha256="0" * 64,
        size_bytes=weights + 4096,
        architecture="qwen3",
        name=None,
        parameters=1,
        file_type="Q4_K_M",
        vocab_type="gpt2",
        vocab_size=151936,
        bos_id=1,
        eos_id=2,
        n_layers=layers,
        n_embd=kv_heads * head * 4,
        context_length=ctx_train,
        expert_count=None,
        expert_used_count=None,
        n_head=kv_heads * 4,
        n_head_kv=kv_heads,
        key_length=head,
        value_length=head,
        weight_bytes=weights,
    )


# The seed's 8 GB case in round numbers: a 4B-class target and a 0.6B-class draft at -c 32768.
# KV per layer at 32768 tokens, 8 KV heads x 128, f16: 32768 x 8 x (128 x 2 + 128 x 2) = 128 MiB.
TARGET = model("target.gguf", layers=36, kv_heads=8, weights=36 * 64 * MIB)  # 2304 MiB + 36 x 128 MiB KV = 6912
DRAFT = model("draft.gguf", layers=28, kv_heads=8, weights=448 * MIB)  # 448 MiB + 28 x 128 MiB KV = 4032


@pytest.mark.parametrize(
    "cache_type, size",
    [
        ("f32", 4),
        ("f16", 2),
        ("bf16", 2),
        ("q8_0", 34 / 32),
        ("q4_0", 18 / 32),
        ("q4_1", 20 / 32),
        ("iq4_nl", 18 / 32),
        ("q5_0", 22 / 32),
        ("q5_1", 24 / 32),
        ("Q8_0", 34 / 32),
    ],
)
def test_cache_type_bytes(cache_type, size):
    assert memfit.cache_type_bytes(cache_type) == size


def test_unknown_cache_type_names_the_choices():
    with pytest.raises(ValueError, match="q8_0"):
        memfit.cache_type_bytes("q3")


def test_kv_cache_of_a_llama3_8b_shape():
    # 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes x 8192 tokens = exactly 1 GiB.
    llama = model(layers=32, kv_heads=8, weights=0)
    assert memfit.kv_cache_bytes(llama, 8192) == 1 * GIB
    assert memfit.kv_cache_bytes(llama, 8192, "q8_0", "q8_0") == GIB * 34 // 64
    assert memfit.kv_cache_bytes(llama, 8192, "q8_0", "f16") == GIB * (34 / 32 + 2) / 4


def test_kv_cache_is_zero_when_the_shape_is_unknown():
    assert (
        memfit.kv_cache_bytes(
            ModelInfo(**{**model(layers=2, kv_heads=1, weights=1).to_dict(), "n_head_kv": None}), 4096
        )
        == 0
    )


def test_partial_offload_splits_weights_and_kv_by_layers():
    est = memfit.model_estimate(TARGET, "target", ctx=32768, ngl=9)
    assert (est.n_layers, est.gpu_layers) == (36, 9)
    assert (est.weight_bytes, est.kv_bytes) == (2304 * MIB, 36 * 128 * MIB)
    assert est.gpu_bytes == 6912 * MIB // 4 and est.cpu_bytes == 6912 * MIB * 3 // 4
    assert memfit.model_estimate(TARGET, "target", ctx=32768, ngl=99).gpu_layers == 36
    assert memfit.model_estimate(TARGET, "target", ctx=32768, ngl=None).gpu_layers == 36
    assert memfit.model_estimate(TARGET, "target", ctx=32768, ngl=-1).cpu_bytes == 0


def test_the_8gb_case_warns_that_the_draft_pushes_target_layers_off():
    models = [
        memfit.model_estimate(TARGET, "target", ctx=32768, ngl=99),
        memfit.model_estimate(DRAFT, "draft", ctx=32768, ngl=99),
    ]
    result = memfit.fit(models, free_bytes=8192 * MIB, reserve_bytes=1024 * MIB)
    assert result.gpu_total_bytes == (6912 + 4032 + 1024) * MIB and result.fits is False
    # Room for the target: 8192 - 1024 - 4032 = 3136 MiB at 192 MiB a layer: 16 layers.
    assert memfit.target_layers_that_fit(models, 8192 * MIB, 1024 * MIB) == 16
    assert "only 16 of 36 target layers fit" in result.warning
    assert "11.69 GiB" in result.warning and "8.00 GiB" in result.warning and "-ctk/-ctv q8_0" in result.warning
    alone = memfit.fit(models[:1], free_bytes=8192 * MIB, reserve_bytes=1024 * MIB)  # 7936 MiB: fits
    assert alone.fits is True and alone.warning is None
    assert json.loads(json.dumps(result.to_dict()))["models"][1]["role"] == "draft"


def test_unknown_free_memory_gives_no_verdict():
    result = memfit.fit([memfit.model_estimate(TARGET, "target", ctx=4096, ngl=99)], free_bytes=None)
    assert result.fits is None and result.warning is None and result.free_bytes is None


def test_nothing_offloaded_needs_no_gpu():
    result = memfit.fit([memfit.model_estimate(TARGET, "target", ctx=4096, ngl=0)], free_bytes=0)
    assert result.gpu_total_bytes == 0 and result.reserve_bytes == 0 and result.fits is True


def test_from_argv_reads_context_offload_and_cache_types():
    argv = [
        "llama-speculative-simple",
        "-m",
        "target.gguf",
        "-md",
        "draft.gguf",
        "-c",
        "32768",
        "-ngl",
        "99",
        "-ngld",
        "14",
        "-ctk",
        "q8_0",
        "-ctv",
        "q8_0",
        "-cd",
        "8192",
    ]
    result = memfit.from_argv(argv, TARGET, DRAFT, free_bytes=80 * GIB, reserve_bytes=0)
    target, draft = result.models
    assert target.kv_bytes == 36 * 128 * MIB * 34 // 64 and target.gpu_layers == 36
    assert draft.kv_bytes == 28 * 32 * MIB and (draft.gpu_layers, draft.n_layers) == (14, 28)  # -cd, f16 default
    assert draft.gpu_bytes == (448 * MIB + 28 * 32 * MIB) // 2
    assert result.fits is True


def test_from_argv_defaults():
    plain = memfit.from_argv(["llama-cli", "-m", "t.gguf"], TARGET, None, free_bytes=80 * GIB)
    (target,) = plain.models
    assert target.kv_bytes == 36 * 16 * MIB and target.gpu_layers == 36  # -c 4096; every layer offloaded
    zero = memfit.from_argv(["llama-cli", "-c", "0", "-ngl", "all"], TARGET, None, free_bytes=80 * GIB)
    assert zero.models[0].kv_bytes == 36 * 128 * MIB  # -c 0: the model's training context


def test_free_memory_from_nvml(fake_nvml):
    assert gpu.free_bytes(0) == 70 * GIB and gpu.free_bytes(1) == 23 * GIB
    assert gpu.free_bytes(5) is None
    assert memfit.from_argv(["x", "-c", "32768"], TARGET, DRAFT, free_bytes=gpu.free_bytes(0)).free_bytes == 70 * GIB


def test_no_free_memory_without_nvml(no_nvml):
    assert gpu.free_bytes(0) is None
    assert memfit.from_argv(["x"], TARGET, DRAFT, free_bytes=gpu.free_bytes(0)).fits is None


def test_draft_flags_of_every_era_reach_the_estimate():
    """Old (-ngld/-ctkd) and new (--spec-draft-ngl/--spec-draft-type-k) spellings give the same estimate."""
    old = ["x", "-m", "t", "-md", "d", "-ngld", "0", "-ctkd", "q8_0", "-ctvd", "q4_0"]
    new = [
        "x",
        "-m",
        "t",
        "--spec-draft-model",
        "d",
        "--spec-draft-ngl",
        "0",
        "--spec-draft-type-k",
        "q8_0",
        "--spec-draft-type-v=q4_0",
    ]
    estimates = [memfit.from_argv(argv, TARGET, DRAFT, free_bytes=80 * GIB).models[1] for argv in (old, new)]
    assert estimates[0] == estimates[1]
    draft = estimates[1]
    assert draft.gpu_layers == 0 and draft.gpu_bytes == 0  # --spec-draft-ngl 0 keeps the draft on the CPU
    default = memfit.from_argv(["x"], TARGET, DRAFT, free_bytes=80 * GIB).models[1]
    assert draft.kv_bytes < default.kv_bytes  # q8_0/q4_0 draft cache, not f16
