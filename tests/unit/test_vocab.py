"""llama.cpp's target/draft vocabulary rules as orch applies them before launch, token texts included: a
hash settles equal vocabularies, and only differing hashes make orch compare texts, from id 5, as strcmp does."""

import gguf
import numpy as np
import pytest

from orchestrator.errors import PreflightError
from orchestrator.models import preflight, vocab
from orchestrator.models.gguf_info import inspect

BASE = [f"<s{i}>" for i in range(5)] + [f"tok{i}" for i in range(995)]  # 1000 tokens: longer than DECODE_LIMIT


def write(path, tokens, *, model="llama", bos=1, eos=2, layers=2):
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(layers)
    writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    writer.add_bos_token_id(bos)
    writer.add_eos_token_id(eos)
    writer.add_tensor("output_norm.weight", np.ones(16, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return inspect(path)


def pair(tmp_path, draft_tokens, **draft):
    return write(tmp_path / "t.gguf", BASE, layers=6), write(tmp_path / "d.gguf", draft_tokens, **draft)


def test_same_vocabulary_is_settled_by_the_hash(tmp_path):
    target, draft = pair(tmp_path, BASE)
    assert target.vocab_sha256 == draft.vocab_sha256 and target.sha256 != draft.sha256
    assert vocab.differences(target, draft) == []


def test_extra_draft_tokens_within_the_limit_pass(tmp_path):
    target, draft = pair(tmp_path, BASE + [f"extra{i}" for i in range(vocab.SPEC_VOCAB_MAX_SIZE_DIFFERENCE)])
    assert target.vocab_sha256 != draft.vocab_sha256
    assert vocab.differences(target, draft) == []


def test_a_differing_token_text_is_named(tmp_path):
    target, draft = pair(tmp_path, BASE[:700] + ["other"] + BASE[701:])
    assert vocab.differences(target, draft) == [
        "token 700 is 'tok695' in the target but 'other' in the draft (llama.cpp compares every token text from id 5 on)"
    ]


def test_the_last_compared_token_counts(tmp_path):
    target, draft = pair(tmp_path, BASE[:-1] + ["last", "beyond"])
    assert vocab.differences(target, draft)[0].startswith("token 999 is 'tok994'")


def test_tokens_below_id_5_are_not_compared(tmp_path):
    # llama.cpp starts at SPEC_VOCAB_CHECK_START_TOKEN_ID: special tokens may be named differently.
    target, draft = pair(tmp_path, ["<unk>", "<bos>", "<eos>", "<pad>", "<x>"] + BASE[5:])
    assert vocab.differences(target, draft) == []


def test_texts_compare_as_c_strings(tmp_path):
    # strcmp stops at the first NUL: llama.cpp takes these two as the same text.
    target = write(tmp_path / "t.gguf", BASE[:10] + ["ab\0c"] + BASE[11:])
    draft = write(tmp_path / "d.gguf", BASE[:10] + ["ab\0d"] + BASE[11:])
    assert vocab.differences(target, draft) == []


def test_bpe_tokenizers_of_other_names_meet_the_text_rule(tmp_path):
    # gpt2 and gemma4 both load as BPE: llama.cpp's type check passes them, the token texts do not.
    target = write(tmp_path / "t.gguf", BASE, model="gpt2")
    draft = write(tmp_path / "d.gguf", BASE[:5] + [f"g{i}" for i in range(995)], model="gemma4")
    assert vocab.metadata_differences(target, draft) == []
    assert vocab.differences(target, draft)[0].startswith("token 5 is 'tok0' in the target but 'g0'")


def test_metadata_failures_skip_the_text_comparison(tmp_path):
    target, draft = pair(tmp_path, [f"x{i}" for i in range(1000)], eos=3)
    assert vocab.differences(target, draft) == ["eos token id 2 vs 3"]


def test_preflight_stops_a_draft_whose_texts_differ(tmp_path):
    pair(tmp_path, BASE[:500] + ["other"] + BASE[501:])
    argv = ["llama-speculative-simple", "-m", str(tmp_path / "t.gguf"), "-md", str(tmp_path / "d.gguf")]
    with pytest.raises(PreflightError, match=r"cannot speculate for target .*: token 500 is 'tok495'"):
        preflight.check(argv)


def test_preflight_passes_a_matching_draft(tmp_path):
    target, draft = pair(tmp_path, BASE)
    used = preflight.check(["llama-speculative-simple", "-m", target.path, "-md", draft.path])
    assert (used.target.n_layers, used.draft.n_layers) == (6, 2)
