"""Whether a draft's vocabulary fits its target: llama.cpp's rules (common_speculative_are_compatible).

llama.cpp refuses a pair whose vocabulary types differ, whose bos or eos token ids differ, whose sizes differ
by more than SPEC_VOCAB_MAX_SIZE_DIFFERENCE, or where any token text from id SPEC_VOCAB_CHECK_START_TOKEN_ID
up to the smaller size differs (compared as C strings). The first three come from metadata. For the texts, equal
hashes of the token arrays settle it at once; only differing hashes (a draft with extra tokens, special tokens
0-4 renamed, another vocabulary) make orch read both arrays, as raw bytes, up to the first difference.
"""

from __future__ import annotations

from orchestrator.models import gguf_info
from orchestrator.models.gguf_info import ModelInfo
from orchestrator.models.gguf_read import raw_strings

# llama.cpp common/speculative.cpp
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5

# tokenizer.ggml.model -> llama_vocab_type, as llama-vocab.cpp maps them: llama.cpp compares the type, so a
# gpt2 and a gemma4 tokenizer (both BPE) pass this rule and meet the token-text one.
VOCAB_TYPES = {
    "no_vocab": "none",
    "none": "none",
    "llama": "spm",
    "bert": "wpm",
    "gpt2": "bpe",
    "hybriddna": "bpe",
    "whitespace": "bpe",
    "gemma4": "bpe",
    "t5": "ugm",
    "rwkv": "rwkv",
    "plamo2": "plamo2",
    "test": "test",
}


def metadata_differences(target: ModelInfo, draft: ModelInfo) -> list[str]:
    """The rules metadata settles: vocabulary type, bos/eos ids and size; [] when all pass."""
    reasons = []
    if _vocab_type(target.vocab_type) != _vocab_type(draft.vocab_type):
        reasons.append(f"vocab type {target.vocab_type} vs {draft.vocab_type}")
    if target.vocab_size is not None and draft.vocab_size is not None:
        diff = abs(target.vocab_size - draft.vocab_size)
        if diff > SPEC_VOCAB_MAX_SIZE_DIFFERENCE:
            reasons.append(
                f"vocab size {target.vocab_size} vs {draft.vocab_size} "
                f"(differ by {diff}, llama.cpp allows {SPEC_VOCAB_MAX_SIZE_DIFFERENCE})"
            )
    if target.bos_id != draft.bos_id:
        reasons.append(f"bos token id {target.bos_id} vs {draft.bos_id}")
    if target.eos_id != draft.eos_id:
        reasons.append(f"eos token id {target.eos_id} vs {draft.eos_id}")
    return reasons


def differences(target: ModelInfo, draft: ModelInfo) -> list[str]:
    """Every reason llama.cpp would refuse the pair; [] when it would accept it.

    The token texts are compared only when metadata passes (llama.cpp stops at its first failed rule too).
    """
    reasons = metadata_differences(target, draft)
    if not reasons and target.vocab_sha256 != draft.vocab_sha256:
        differing = first_token_difference(target.path, draft.path)
        if differing:
            reasons.append(differing)
    return reasons


def first_token_difference(target_path: str, draft_path: str) -> str | None:
    """The first token id (from SPEC_VOCAB_CHECK_START_TOKEN_ID) whose text differs, as a reason; None if none."""
    spans = gguf_info.token_span(target_path), gguf_info.token_span(draft_path)
    if spans[0] is None or spans[1] is None:
        return None  # a model without a vocabulary fails to load in llama.cpp: a different error
    first = SPEC_VOCAB_CHECK_START_TOKEN_ID
    with raw_strings(target_path, spans[0]) as ours, raw_strings(draft_path, spans[1]) as theirs:
        n = min(len(ours), len(theirs))
        if n <= first or ours.block(first, n) == theirs.block(first, n):
            return None
        for i in range(first, n):
            # strcmp: the text ends at its first NUL byte
            a, b = ours.item(i).split(b"\0")[0], theirs.item(i).split(b"\0")[0]
            if a != b:
                return (
                    f"token {i} is {_text(a)} in the target but {_text(b)} in the draft "
                    f"(llama.cpp compares every token text from id {first} on)"
                )
    return None


def _vocab_type(model: str | None) -> str | None:
    return VOCAB_TYPES.get(model, model) if model is not None else None


def _text(raw: bytes) -> str:
    return repr(raw.decode("utf-8", errors="replace"))
