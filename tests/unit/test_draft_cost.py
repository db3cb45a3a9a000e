"""What a draft's bytes per token say before launch (models/draft_cost.py)."""

import pytest

from orchestrator.models.draft_cost import draft_cost
from orchestrator.models.gguf_info import ModelInfo

MIB = 2**20


def model(decode_bytes):
    return ModelInfo(
        path="m.gguf",
        sha256="s",
        size_bytes=decode_bytes or 0,
        architecture="gemma3",
        name=None,
        parameters=0,
        file_type=None,
        vocab_type=None,
        vocab_size=None,
        bos_id=None,
        eos_id=None,
        n_layers=None,
        n_embd=None,
        context_length=None,
        expert_count=None,
        expert_used_count=None,
        decode_bytes=decode_bytes,
    )


def test_a_layer_cut_gemma_draft_must_beat_82_percent_acceptance():
    """Gemma 3 270M and a draft of its first 6 of 18 layers: the 170 MiB tied embedding is in both."""
    cost = draft_cost(model(241 * MIB), model(198 * MIB))
    assert cost.ratio == pytest.approx(0.82, abs=0.005) and cost.can_pay and cost.warning() is None
    assert "breaks even only above 82% acceptance" in cost.note()


def test_a_draft_as_large_as_its_target_cannot_pay():
    cost = draft_cost(model(100 * MIB), model(100 * MIB))
    assert not cost.can_pay and "no acceptance can pay" in cost.warning()


def test_nothing_to_say_without_both_sizes():
    assert draft_cost(model(100 * MIB), None) is None
    assert draft_cost(model(100 * MIB), model(None)) is None
