"""GGUF metadata as orch reads it, and the vocabulary rules llama.cpp applies to a target/draft pair."""

import dataclasses
import hashlib
import json

import gguf
import numpy as np
import pytest

from orchestrator.errors import ModelError, OrchError
from orchestrator.models.ggml_types import file_type_name
from orchestrator.models.gguf_info import ModelInfo, decode_bytes, inspect
from orchestrator.models.vocab import differences as vocab_differences


def write_gguf(path, *, vocab_model="llama", n_vocab=8, bos=1, eos=2, experts=None, with_vocab=True, name="tiny"):
    """A small but loadable-looking llama GGUF: a few tensors, hyperparameters and (optionally) a vocabulary."""
    writer = gguf.GGUFWriter(path, "llama")
    if name:
        writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_block_count(3)
    writer.add_embedding_length(16)
    writer.add_context_length(2048)
    if experts:
        writer.add_expert_count(experts[0])
        writer.add_expert_used_count(experts[1])
    if with_vocab:
        writer.add_tokenizer_model(vocab_model)
        writer.add_token_list([f"t{i}" for i in range(n_vocab)])
        writer.add_bos_token_id(bos)
        writer.add_eos_token_id(eos)
    writer.add_tensor("token_embd.weight", np.zeros((n_vocab, 16), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(16, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_inspect_reads_every_field(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", n_vocab=10, experts=(8, 2))
    info = inspect(path)
    assert info.path == str(path)
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert info.size_bytes == path.stat().st_size
    assert (info.architecture, info.name, info.file_type) == ("llama", "tiny", "Q4_K_M")
    assert info.parameters == 10 * 16 + 16
    assert (info.vocab_type, info.vocab_size, info.bos_id, info.eos_id) == ("llama", 10, 1, 2)
    assert (info.n_layers, info.n_embd, info.context_length) == (3, 16, 2048)
    assert (info.expert_count, info.expert_used_count) == (8, 2)
    assert info.to_dict()["vocab_size"] == 10 and set(info.to_dict()) == {f.name for f in dataclasses.fields(info)}


def test_absent_keys_are_none(tmp_path):
    info = inspect(write_gguf(tmp_path / "bare.gguf", with_vocab=False, name=None))
    assert info.name is None
    assert (info.vocab_type, info.vocab_size, info.bos_id, info.eos_id) == (None, None, None, None)
    assert (info.expert_count, info.expert_used_count) == (None, None)


def test_missing_file_is_a_model_error_naming_it(tmp_path):
    with pytest.raises(ModelError) as err:
        inspect(tmp_path / "nope.gguf")
    assert "nope.gguf" in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, OrchError) and err.value.exit_code == 11


@pytest.mark.parametrize("content", [b"", b"not a gguf at all\n" * 10, b"GGUF\x03\x00"], ids=["empty", "text", "cut"])
def test_non_gguf_is_a_model_error_naming_it(tmp_path, content):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(ModelError) as err:
        inspect(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_directory_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="not a regular file"):
        inspect(tmp_path)


@pytest.mark.parametrize(
    "value, name",
    [(0, "F32"), (1, "F16"), (15, "Q4_K_M"), (7, "Q8_0"), (32, "BF16"), (None, None), (999, "unknown (999)")],
)
def test_file_type_names(value, name):
    assert file_type_name(value) == name


TARGET = ModelInfo(
    path="t.gguf",
    sha256="0" * 64,
    size_bytes=1,
    architecture="llama",
    name=None,
    parameters=1,
    file_type="F16",
    vocab_type="llama",
    vocab_size=32000,
    bos_id=1,
    eos_id=2,
    n_layers=6,
    n_embd=128,
    context_length=4096,
    expert_count=None,
    expert_used_count=None,
)


def test_compatible_pair_has_no_differences(tmp_path):
    target = inspect(write_gguf(tmp_path / "t.gguf", n_vocab=300))
    draft = inspect(write_gguf(tmp_path / "d.gguf", n_vocab=300 - 128))  # exactly the allowed difference
    assert vocab_differences(target, draft) == []


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"vocab_type": "gpt2"}, "vocab type llama vs gpt2"),
        ({"vocab_size": 32000 + 129}, "vocab size 32000 vs 32129"),
        ({"vocab_size": 32000 - 129}, "vocab size 32000 vs 31871"),
        ({"bos_id": 50256}, "bos token id 1 vs 50256"),
        ({"eos_id": 151645}, "eos token id 2 vs 151645"),
    ],
)
def test_each_rule_names_both_values(change, expected):
    reasons = vocab_differences(TARGET, dataclasses.replace(TARGET, **change))
    assert len(reasons) == 1 and reasons[0].startswith(expected)


def test_size_within_limit_is_accepted():
    assert vocab_differences(TARGET, dataclasses.replace(TARGET, vocab_size=32000 + 128)) == []


def test_gpt2_draft_against_spm_target_gives_every_reason(tmp_path):
    target = inspect(write_gguf(tmp_path / "t.gguf", n_vocab=32))
    draft = inspect(write_gguf(tmp_path / "d.gguf", vocab_model="gpt2", n_vocab=200, bos=199, eos=199))
    reasons = vocab_differences(target, draft)
    assert [r.split(" ")[0] + " " + r.split(" ")[1] for r in reasons] == [
        "vocab type",
        "vocab size",
        "bos token",
        "eos token",
    ]


# Weights, quantisation mix, decode bytes and attention shape (issue 6).

Q8_0 = gguf.GGMLQuantizationType.Q8_0


def write_layout(path, tensors, *, experts=None, heads=None):
    """A GGUF with the given tensors: name -> float array, or (rows, Q8_0 bytes per row) for a Q8_0 tensor."""
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(2)
    writer.add_embedding_length(64)
    if experts:
        writer.add_expert_count(experts[0])
        writer.add_expert_used_count(experts[1])
    for key, value in (heads or {}).items():
        getattr(writer, f"add_{key}")(value)
    for name, data in tensors.items():
        if isinstance(data, tuple):  # Q8_0: 34 bytes per 32 weights
            writer.add_tensor(name, np.zeros(data, dtype=np.uint8), raw_dtype=Q8_0)
        else:
            writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


DENSE = {
    "token_embd.weight": (100, 34 * 2),  # 100 x 64 weights in Q8_0: 6800 bytes
    "blk.0.attn_q.weight": (64, 34 * 2),  # 4352 bytes
    "blk.0.attn_norm.weight": np.ones(64, dtype=np.float32),  # 256 bytes
    "blk.0.ffn_up.weight": np.zeros((32, 64), dtype=np.float16),  # 4096 bytes
}


def test_dense_model_weights_mix_and_decode_bytes(tmp_path):
    info = inspect(write_layout(tmp_path / "dense.gguf", {**DENSE, "output.weight": (100, 34 * 2)}))
    assert info.quant_mix == {"Q8_0": 6800 + 4352 + 6800, "F16": 4096, "F32": 256}
    assert list(info.quant_mix) == ["Q8_0", "F16", "F32"]  # largest first
    assert info.weight_bytes == 6800 + 4352 + 256 + 4096 + 6800
    assert info.weight_bytes < info.size_bytes  # the header and alignment padding are not weights
    assert info.expert_bytes == 0
    # The embedding lookup reads one row: an untied token_embd does not count; output.weight does.
    assert info.decode_bytes == info.weight_bytes - 6800
    assert info.parameters == 100 * 64 + 64 * 64 + 64 + 32 * 64 + 100 * 64


def test_tied_embedding_is_the_output_matrix_and_counts(tmp_path):
    info = inspect(write_layout(tmp_path / "tied.gguf", DENSE))
    assert info.decode_bytes == info.weight_bytes == 6800 + 4352 + 256 + 4096


def test_moe_decode_reads_shared_weights_and_the_used_share_of_experts(tmp_path):
    tensors = {
        **DENSE,
        "output.weight": (100, 34 * 2),
        "blk.0.ffn_gate_inp.weight": np.zeros((8, 64), dtype=np.float32),  # router: 2048 bytes, always read
        "blk.0.ffn_up_exps.weight": np.zeros((8, 32, 64), dtype=np.float16),  # 8 experts: 32768 bytes
        "blk.0.ffn_down_exps.weight": (8 * 64, 34),  # 8 experts x 64 x 32 in Q8_0: 17408 bytes
        "blk.0.ffn_up_shexp.weight": np.zeros((32, 64), dtype=np.float16),  # shared expert: 4096, always read
    }
    info = inspect(write_layout(tmp_path / "moe.gguf", tensors, experts=(8, 2)))
    assert (info.expert_count, info.expert_used_count) == (8, 2)
    assert info.expert_bytes == 32768 + 17408
    dense_part = 4352 + 256 + 4096 + 6800 + 2048 + 4096  # token_embd left out: output.weight exists
    assert info.decode_bytes == dense_part + (32768 + 17408) * 2 // 8
    assert info.weight_bytes == dense_part + 6800 + 32768 + 17408
    assert json.loads(json.dumps(info.to_dict()))["quant_mix"] == info.quant_mix


def test_expert_tensors_without_expert_metadata_count_in_full():
    assert decode_bytes({"blk.0.ffn_up_exps.weight": 800, "output.weight": 10}, None, None) == 810
    assert decode_bytes({"blk.0.ffn_up_exps.weight": 800, "output.weight": 10}, 8, 1) == 110
    assert decode_bytes({}, None, None) == 0


def test_attention_shape_from_metadata(tmp_path):
    heads = {"head_count": 8, "head_count_kv": 2}
    info = inspect(write_layout(tmp_path / "gqa.gguf", DENSE, heads=heads))
    assert (info.n_head, info.n_head_kv, info.key_length, info.value_length) == (8, 2, 8, 8)  # 64 / 8
    explicit = {"head_count": 8, "head_count_kv": [2, 4], "key_length": 192, "value_length": 128}
    info = inspect(write_layout(tmp_path / "mla.gguf", DENSE, heads=explicit))
    assert (info.n_head, info.n_head_kv, info.key_length, info.value_length) == (8, 4, 192, 128)


def test_head_count_kv_defaults_to_head_count(tmp_path):
    info = inspect(write_layout(tmp_path / "mha.gguf", DENSE, heads={"head_count": 4}))
    assert (info.n_head, info.n_head_kv, info.key_length) == (4, 4, 16)
    bare = inspect(write_layout(tmp_path / "bare.gguf", DENSE))
    assert (bare.n_head, bare.n_head_kv, bare.key_length, bare.value_length) == (None, None, None, None)
