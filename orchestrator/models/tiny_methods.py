"""Tiny random-weight models for the speculative methods that need more than a draft LLM: a qwen35 target that
carries one MTP block (draft-mtp), and EAGLE3, DFlash and DSpark drafts for tiny.py's llama target
(tiny_heads.py). Each head is built from its target's own weights so that it agrees with the target part of the
time; how, per method, is in the builders' docstrings.

Every file carries `orch.tiny.recipe` (a hash of what decided its bytes, as tiny.py's models do) and
`orch.tiny.spec` (that recipe spelled out as JSON). The vocabulary is llama-spm (32000 tokens) for all of them:
the qwen35 vocabulary of llama.cpp's tree has 248k tokens, which would make a "tiny" model 130 MB.

Measured with the real llama-speculative-simple (0c1e57098, greedy, draft n-max 3, -n 128) over five prompts:
acceptance 43-54% for draft-mtp, 51-77% for draft-eagle3, 24-28% for draft-dflash (its first position 71-83%,
later ones never), 63-80% for draft-dspark; the speculative output matched plain greedy decoding.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import gguf
import numpy as np

from orchestrator.models import tiny, tiny_heads
from orchestrator.models.tiny import SPM_VOCAB, TARGET, VocabCache, f16
from orchestrator.models.tiny_heads import HeadSpec

RECIPE_VERSION = 1  # bump when the weights or metadata written for the same spec change
SPEC_KEY = "orch.tiny.spec"
EPS = 1e-5


@dataclass(frozen=True)
class Qwen35Spec:
    """A hybrid qwen35 target: gated delta-net layers, every `full_attention_interval`-th layer full attention,
    then `nextn` MTP blocks (llama.cpp's qwen35 MTP graph supports exactly one)."""

    n_embd: int = 128
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 256
    n_trunk: int = 4
    nextn: int = 1
    full_attention_interval: int = 2
    ssm_state: int = 32  # head size of the delta-net keys and values
    ssm_groups: int = 2  # key heads
    ssm_v_heads: int = 4  # value heads (llama.cpp's ssm.time_step_rank)
    ssm_conv: int = 4
    # How far the trunk's layers move it from the MTP head's guess: 0.02 and 0.03 let greedy decoding fall into
    # loops the head predicts perfectly (acceptance up to 99%), 0.04 gave 43-54% over five prompts.
    layer_scale: float = 0.04
    output_scale: float = 8.0  # as tiny.TinySpec
    context_length: int = 4096


@dataclass(frozen=True)
class MethodModel:
    """One file and how llama.cpp runs it: `-m target [-md file] --spec-type spec_type`."""

    file: str
    spec_type: str
    target: str  # the file passed as -m; for MTP the head is inside it (no -md)
    spec: Qwen35Spec | HeadSpec

    @property
    def draft(self) -> str | None:
        return None if self.file == self.target else self.file


MODELS = {
    "mtp": MethodModel("tiny-qwen35-mtp.gguf", "draft-mtp", "tiny-qwen35-mtp.gguf", Qwen35Spec()),
    "eagle3": MethodModel("tiny-eagle3.gguf", "draft-eagle3", tiny.FILES["target"][0], HeadSpec("eagle3")),
    "dflash": MethodModel("tiny-dflash.gguf", "draft-dflash", tiny.FILES["target"][0], HeadSpec("dflash")),
    "dspark": MethodModel("tiny-dspark.gguf", "draft-dspark", tiny.FILES["target"][0], HeadSpec("dflash", markov=True)),
}


def make_method_models(
    out_dir: Path, vocab_dir: Path, seed: int = 0, vocabs: VocabCache | None = None
) -> dict[str, Path]:
    """Write the MTP target and the EAGLE3/DFlash/DSpark drafts into out_dir, skipping files already made by the
    same recipe. The drafts belong to tiny.py's target of the same seed. Returns {role: path}."""
    vocabs = vocabs or VocabCache(vocab_dir)
    vocab_path = vocabs.path(SPM_VOCAB)
    # The drafts copy the llama target's weights, so its recipe is part of theirs.
    target_recipe = tiny.recipe_id(vocab_path, TARGET, seed)
    paths = {}
    for role, model in MODELS.items():
        extra = {} if model.draft is None else {"target": model.target, "target_recipe": target_recipe}
        recipe = tiny.recipe_id(vocab_path, model.spec, seed, version=RECIPE_VERSION, **extra)
        described = {
            "role": role,
            "spec_type": model.spec_type,
            "version": RECIPE_VERSION,
            "seed": seed,
            "vocab": SPM_VOCAB,
            **asdict(model.spec),
            **extra,
        }

        def write(tmp, model=model, recipe=recipe, described=described):
            _write(tmp, model, vocabs, seed, recipe, described)

        paths[role] = tiny.make_file(Path(out_dir) / model.file, recipe, write)
    return paths


def _write(path: Path, model: MethodModel, vocabs: VocabCache, seed: int, recipe: str, described: dict) -> None:
    n_vocab = vocabs.n_vocab(SPM_VOCAB)
    spec = model.spec
    writer = gguf.GGUFWriter(path, "qwen35" if isinstance(spec, Qwen35Spec) else spec.arch)
    writer.add_name(Path(model.file).stem)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_string(tiny.RECIPE_KEY, recipe)
    writer.add_string(SPEC_KEY, json.dumps(described, sort_keys=True))
    tiny.copy_tokenizer(writer, vocabs.reader(SPM_VOCAB))
    if isinstance(spec, Qwen35Spec):
        _qwen35_hparams(writer, spec, n_vocab)
        tiny.write_tensors(writer, _qwen35_tensors(spec, n_vocab, seed))
    else:
        tiny_heads.add_hparams(writer, spec, n_vocab)
        tiny.write_tensors(writer, tiny_heads.tensors(spec, n_vocab, seed))


def _qwen35_hparams(w: gguf.GGUFWriter, spec: Qwen35Spec, n_vocab: int) -> None:
    head_dim = spec.n_embd // spec.n_head
    w.add_context_length(spec.context_length)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_trunk + spec.nextn)  # the MTP blocks are the last blocks
    w.add_nextn_predict_layers(spec.nextn)
    w.add_feed_forward_length(spec.n_ff)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    # qwen35 requires M-RoPE sections; text positions are the same in every section, so only their sum matters.
    w.add_rope_dimension_sections([head_dim // 4, head_dim // 8, head_dim // 8, 0])
    w.add_layer_norm_rms_eps(EPS)
    w.add_full_attention_interval(spec.full_attention_interval)
    w.add_ssm_conv_kernel(spec.ssm_conv)
    w.add_ssm_state_size(spec.ssm_state)
    w.add_ssm_group_count(spec.ssm_groups)
    w.add_ssm_time_step_rank(spec.ssm_v_heads)
    w.add_ssm_inner_size(spec.ssm_state * spec.ssm_v_heads)
    w.add_vocab_size(n_vocab)


def _qwen35_tensors(spec: Qwen35Spec, n_vocab: int, seed: int):
    """The trunk's weights are random and small; the MTP block reads the next token's embedding only.

    MTP runs its block on eh_proj([enorm(embed(x[p+1])), hnorm(h[p])]) and predicts x[p+2] through the target's
    output norm and LM head (the file has no nextn.shared_head_* tensors). eh_proj here passes the embedding half
    and drops the hidden half, and the block is a copy of the trunk's last full-attention layer: the head guesses
    like the trunk without its other layers, so it agrees with the target part of the time. It ignores h[p]: a
    wrong h handed over by llama.cpp would not lower acceptance.
    """
    rng = np.random.default_rng([seed, n_vocab, 35])
    yield "token_embd.weight", f16(rng.standard_normal((n_vocab, spec.n_embd)))
    yield "output.weight", f16(rng.standard_normal((n_vocab, spec.n_embd)) * spec.output_scale)
    yield "output_norm.weight", _ones(spec.n_embd)
    last_full = {}
    for i in range(spec.n_trunk):
        layer_rng = np.random.default_rng([seed, n_vocab, 35, i])
        if (i + 1) % spec.full_attention_interval == 0:  # llama.cpp's rule for which layers are full attention
            last_full = dict(_qwen35_attention(spec, layer_rng))
            layer = last_full.items()
        else:
            layer = _qwen35_delta_net(spec, layer_rng)
        yield from ((f"blk.{i}.{name}", t) for name, t in layer)
    mtp = spec.n_trunk
    yield from ((f"blk.{mtp}.{name}", t) for name, t in last_full.items())
    yield f"blk.{mtp}.nextn.eh_proj.weight", f16(np.hstack([np.eye(spec.n_embd), np.zeros((spec.n_embd, spec.n_embd))]))
    yield f"blk.{mtp}.nextn.enorm.weight", _ones(spec.n_embd)
    yield f"blk.{mtp}.nextn.hnorm.weight", _ones(spec.n_embd)


def _qwen35_block(spec: Qwen35Spec, rng: np.random.Generator):
    d, ff = spec.n_embd, spec.n_ff
    yield "attn_norm.weight", _ones(d)
    yield "post_attention_norm.weight", _ones(d)
    yield "ffn_gate.weight", _small(rng, (ff, d), spec.layer_scale)
    yield "ffn_up.weight", _small(rng, (ff, d), spec.layer_scale)
    yield "ffn_down.weight", _small(rng, (d, ff), spec.layer_scale)


def _qwen35_attention(spec: Qwen35Spec, rng: np.random.Generator):
    d, hd = spec.n_embd, spec.n_embd // spec.n_head
    yield from _qwen35_block(spec, rng)
    yield "attn_q.weight", _small(rng, (2 * hd * spec.n_head, d), spec.layer_scale)  # the query and its gate
    yield "attn_k.weight", _small(rng, (hd * spec.n_head_kv, d), spec.layer_scale)
    yield "attn_v.weight", _small(rng, (hd * spec.n_head_kv, d), spec.layer_scale)
    yield "attn_output.weight", _small(rng, (d, hd * spec.n_head), spec.layer_scale)
    yield "attn_q_norm.weight", _ones(hd)
    yield "attn_k_norm.weight", _ones(hd)


def _qwen35_delta_net(spec: Qwen35Spec, rng: np.random.Generator):
    d = spec.n_embd
    key_dim, value_dim = spec.ssm_state * spec.ssm_groups, spec.ssm_state * spec.ssm_v_heads
    yield from _qwen35_block(spec, rng)
    yield "attn_qkv.weight", _small(rng, (2 * key_dim + value_dim, d), spec.layer_scale)
    yield "attn_gate.weight", _small(rng, (value_dim, d), spec.layer_scale)
    # The convolution and the per-head decay stay F32, as converted models store them.
    yield "ssm_conv1d.weight", (rng.standard_normal((2 * key_dim + value_dim, spec.ssm_conv)) * 0.5).astype(np.float32)
    yield "ssm_dt.bias", rng.standard_normal(spec.ssm_v_heads).astype(np.float32)
    yield "ssm_a", -np.exp(rng.standard_normal(spec.ssm_v_heads)).astype(np.float32)  # negative: the state decays
    yield "ssm_beta.weight", _small(rng, (spec.ssm_v_heads, d), spec.layer_scale)
    yield "ssm_alpha.weight", _small(rng, (spec.ssm_v_heads, d), spec.layer_scale)
    yield "ssm_norm.weight", _ones(spec.ssm_state)
    yield "ssm_out.weight", _small(rng, (d, value_dim), spec.layer_scale)


def _ones(n: int) -> np.ndarray:
    return np.ones(n, dtype=np.float32)


def _small(rng: np.random.Generator, shape: tuple[int, int], scale: float) -> np.ndarray:
    return f16(rng.standard_normal(shape) * scale)
