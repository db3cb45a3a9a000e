"""EAGLE3, DFlash and DSpark drafts for the llama tiny target of tiny.py, built from its own weights.

These drafts read the target's per-layer inputs (llama publishes them in llama.cpp 0c1e57098: `t_layer_inp` in
src/models/llama.cpp). None of them is trained, so each is wired by hand to compute one guess: the target's LM
head applied to the normalised embedding of the latest token. The tiny target's residual stream is dominated by
the token embedding (its layers are scaled down), so that guess agrees with the target part of the time, and
acceptance lands between 0 and 1. The keys and tensors are the ones src/models/eagle3.cpp and dflash.cpp load.
"""

from __future__ import annotations

from dataclasses import dataclass

import gguf
import numpy as np

from orchestrator.models.tiny import TARGET, f16, llama_tensors

EPS = 1e-5
MASK_TOKEN = 0  # <unk> of the llama-spm vocabulary: never in a prompt, so free to serve as DFlash's mask token


@dataclass(frozen=True)
class HeadSpec:
    arch: str  # general.architecture: eagle3 | dflash (DSpark is dflash with a Markov head)
    target_layers: tuple[int, ...] = (1, 3, 5)  # ids of the target layers whose inputs the draft reads
    block_size: int = 8  # dflash: the trained block; the draft window is at most block_size - 1
    markov: bool = False  # DSpark's Markov head
    n_ff: int = 256
    n_head: int = 4


def add_hparams(w: gguf.GGUFWriter, spec: HeadSpec, n_vocab: int) -> None:
    t, arch = TARGET, spec.arch
    w.add_context_length(t.context_length)
    w.add_embedding_length(t.n_embd)  # DFlash requires the target's width (EAGLE3 would allow another)
    w.add_block_count(1)
    w.add_feed_forward_length(spec.n_ff)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head)
    w.add_rope_dimension_count(t.n_embd // spec.n_head)
    w.add_layer_norm_rms_eps(EPS)
    w.add_vocab_size(n_vocab)
    w.add_array(f"{arch}.target_layers", list(spec.target_layers))
    if arch == "eagle3":
        w.add_uint32("eagle3.target_hidden_size", t.n_embd)
        w.add_bool("eagle3.norm_before_residual", True)
        return
    w.add_uint32("dflash.block_size", spec.block_size)
    w.add_uint32("dflash.attention.sliding_window", 2)
    w.add_array("dflash.attention.sliding_window_pattern", [True])
    w.add_mask_token_id(MASK_TOKEN)
    if spec.markov:
        w.add_bool("dflash.sample_from_anchor", False)  # the DFlash block layout: slot 0 is the last token
        w.add_bool("dflash.has_confidence_head", False)  # so --spec-draft-p-min > 0 is refused by name
    # No token_embd or output tensors: llama.cpp takes the target's (ctx_other), as for real full-vocab drafts.


def tensors(spec: HeadSpec, n_vocab: int, seed: int):
    """(name, array) pairs; the target's weights come from tiny.py's recipe for the same seed."""
    target = dict(llama_tensors(TARGET, n_vocab, seed))
    return _eagle3(spec, target) if spec.arch == "eagle3" else _dflash(spec, target)


def _eagle3(spec: HeadSpec, target: dict):
    """EAGLE3's decoder takes (embed(x[p+1]), g[p]) at position p and predicts x[p+2]; the embedding reaches the
    output only through attention. Here q and k read the embedding half, scaled up so that each position attends
    to itself (score ~22 per head against ~N(0, 4) elsewhere), and v and the output projection pass it through:
    the layer's output is the normalised embedding of x[p+1], plus a small share of g (norm_before_residual with
    hidden norm 0.1) and the target's last FFN. fc averages the three target features, which reach the output
    only through that share; drafting past the first token feeds back the draft's own state the same way.
    """
    d = TARGET.n_embd
    eye, zero = np.eye(d), np.zeros((d, d))
    yield "fc.weight", _average(len(spec.target_layers))
    yield "output_norm.weight", _ones(d)
    yield "blk.0.attn_norm.weight", _ones(d)
    yield "blk.0.attn_norm_2.weight", np.full(d, 0.1, dtype=np.float32)
    yield "blk.0.attn_q.weight", f16(np.hstack([2 * eye, zero]))
    yield "blk.0.attn_k.weight", f16(np.hstack([2 * eye, zero]))
    yield "blk.0.attn_v.weight", f16(np.hstack([eye, zero]))
    yield "blk.0.attn_output.weight", f16(eye)
    yield "blk.0.ffn_norm.weight", _ones(d)
    yield from _last_ffn(target)


def _dflash(spec: HeadSpec, target: dict):
    """DFlash decodes the block [x[n], mask, mask, ...] at positions n, n+1, ... in one non-causal pass, and block
    position i predicts x[n+i]. A sliding window of 2 lets position n+1 see x[n] and the masks only; q = 0 makes
    attention uniform over them, and v projects the mask's embedding away, so position n+1 receives the
    embedding of x[n] (scaled back up by the output projection) and guesses x[n+1] through the target's LM head.
    Later positions see only masks and guess one fixed token: the first drafted token of a block is right part
    of the time, the others seldom, as these hand-set weights cannot pass the guess of x[n+1] on to position n+2
    within the one pass (a trained DFlash learns to). The injected target features (fc, then K/V) fall outside
    the window: they are computed and cached, never attended to.

    DSpark adds a Markov head: bias(prev) = markov_w2 . markov_w1[prev], here the target's LM head applied to
    the normalised embedding of prev, chained greedily along the block. The base logits are damped (output norm
    0.05) so the chain decides, and every drafted token is the guess from the one before it.
    """
    d = TARGET.n_embd
    emb = target["token_embd.weight"].astype(np.float64)
    mask = emb[MASK_TOKEN] / np.linalg.norm(emb[MASK_TOKEN])
    yield "fc.weight", _average(len(spec.target_layers))
    yield "enc.output_norm.weight", _ones(d)
    yield "output_norm.weight", np.full(d, 0.05 if spec.markov else 1.0, dtype=np.float32)
    yield "blk.0.attn_norm.weight", _ones(d)
    yield "blk.0.attn_q.weight", f16(np.zeros((d, d)))
    yield "blk.0.attn_k.weight", f16(np.zeros((d, d)))
    yield "blk.0.attn_v.weight", f16(np.eye(d) - np.outer(mask, mask))
    # Undo the averaging over up to block_size keys, then outweigh the mask embedding in the residual.
    yield "blk.0.attn_output.weight", f16(np.eye(d) * 8 * spec.block_size)
    yield "blk.0.attn_q_norm.weight", _ones(d // spec.n_head)
    yield "blk.0.attn_k_norm.weight", _ones(d // spec.n_head)
    yield "blk.0.ffn_norm.weight", _ones(d)
    yield from _last_ffn(target)
    if spec.markov:
        yield "markov_w1.weight", f16(emb / np.sqrt(np.mean(emb**2, axis=1, keepdims=True) + EPS))
        yield "markov_w2.weight", target["output.weight"]


def _last_ffn(target: dict):
    last = TARGET.n_layers - 1
    for name in ("ffn_gate", "ffn_up", "ffn_down"):
        yield f"blk.0.{name}.weight", target[f"blk.{last}.{name}.weight"]


def _average(n_features: int) -> np.ndarray:
    """fc: the mean of the target features (each n_embd wide)."""
    return f16(np.hstack([np.eye(TARGET.n_embd)] * n_features) / n_features)


def _ones(n: int) -> np.ndarray:
    return np.ones(n, dtype=np.float32)
