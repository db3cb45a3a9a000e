"""GGUF metadata read through the gguf package, and the vocabulary rules llama.cpp applies to a target/draft pair."""

import dataclasses
import hashlib

import gguf
import numpy as np
import pytest

from orchestrator.errors import ModelError, OrchError
from orchestrator.gguf_info import ModelInfo, file_type_name, inspect, vocab_differences


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


@pytest.mark.parametrize("value, name", [(0, "F32"), (1, "F16"), (15, "Q4_K_M"), (7, "Q8_0"), (32, "BF16"),
                                         (None, None), (999, "unknown (999)")])
def test_file_type_names(value, name):
    assert file_type_name(value) == name


TARGET = ModelInfo(path="t.gguf", sha256="0" * 64, size_bytes=1, architecture="llama", name=None, parameters=1,
                   file_type="F16", vocab_type="llama", vocab_size=32000, bos_id=1, eos_id=2, n_layers=6, n_embd=128,
                   context_length=4096, expert_count=None, expert_used_count=None)


def test_compatible_pair_has_no_differences(tmp_path):
    target = inspect(write_gguf(tmp_path / "t.gguf", n_vocab=300))
    draft = inspect(write_gguf(tmp_path / "d.gguf", n_vocab=300 - 128))  # exactly the allowed difference
    assert vocab_differences(target, draft) == []


@pytest.mark.parametrize("change, expected", [
    ({"vocab_type": "gpt2"}, "vocab type llama vs gpt2"),
    ({"vocab_size": 32000 + 129}, "vocab size 32000 vs 32129"),
    ({"vocab_size": 32000 - 129}, "vocab size 32000 vs 31871"),
    ({"bos_id": 50256}, "bos token id 1 vs 50256"),
    ({"eos_id": 151645}, "eos token id 2 vs 151645"),
])
def test_each_rule_names_both_values(change, expected):
    reasons = vocab_differences(TARGET, dataclasses.replace(TARGET, **change))
    assert len(reasons) == 1 and reasons[0].startswith(expected)


def test_size_within_limit_is_accepted():
    assert vocab_differences(TARGET, dataclasses.replace(TARGET, vocab_size=32000 + 128)) == []


def test_gpt2_draft_against_spm_target_gives_every_reason(tmp_path):
    target = inspect(write_gguf(tmp_path / "t.gguf", n_vocab=32))
    draft = inspect(write_gguf(tmp_path / "d.gguf", vocab_model="gpt2", n_vocab=200, bos=199, eos=199))
    reasons = vocab_differences(target, draft)
    assert [r.split(" ")[0] + " " + r.split(" ")[1] for r in reasons] == ["vocab type", "vocab size", "bos token",
                                                                         "eos token"]
