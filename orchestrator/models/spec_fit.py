"""Does a draft (or a target's own head) fit the speculation method asked for? Read from GGUF metadata, before launch.

llama.cpp 0c1e57098 finds these only after loading both models, and then as an abort (`draft model is not eagle3`),
a silent fallback (an MTP type on a target without MTP layers prints `failed to initialize speculative decoding`
and exits 1) or a failed first decode (`embd row width 384 does not match the decoder input 128`). The rules are
its own (common/speculative.cpp, src/models/{eagle3,dflash}.cpp):
- draft-mtp drafts with the target's MTP blocks: the target must have `<arch>.nextn_predict_layers` > 0;
- draft-eagle3 needs an `eagle3` draft, draft-dflash and draft-dspark a `dflash` one (DSpark is a DFlash file with
  a Markov head); their `target_layers` must be layers the target has (`target layer id 5 exceeds target
  n_layer 4`, an abort, where the target's MTP block is not counted);
- an EAGLE3 draft's `target_hidden_size` and a DFlash draft's hidden size must be the target's;
- a plain draft model (draft-simple, or -md with no type) must not be such a head: those never auto-detect in
  orch's runs (the dialect adds --spec-type draft-simple to a bare -md), so the type must be named.
"""

from __future__ import annotations

from orchestrator.models.gguf_info import ModelInfo

HEAD_DRAFTS = {"draft-eagle3": "eagle3", "draft-dflash": "dflash", "draft-dspark": "dflash"}
HEAD_ARCHS = {"eagle3": "draft-eagle3", "dflash": "draft-dflash"}


def mismatch(spec_types: list[str], target: ModelInfo | None, draft: ModelInfo | None) -> str | None:
    """One line naming file, architecture and spec type when the models cannot run that method; else None."""
    if draft is not None and draft.architecture in HEAD_ARCHS and not set(spec_types) & set(HEAD_DRAFTS):
        named = f"--spec-type {','.join(spec_types)}" if spec_types else "no --spec-type"
        return (
            f"draft {draft.path} has architecture {draft.architecture} but the arm gives {named}; "
            f"use --spec-type {HEAD_ARCHS[draft.architecture]}"
        )
    for spec in spec_types:
        if spec == "draft-mtp" and target is not None and not target.nextn_layers:
            return (
                f"--spec-type draft-mtp needs a target with MTP layers; {target.path} ({target.architecture}) "
                f"has no {target.architecture}.nextn_predict_layers"
            )
        want = HEAD_DRAFTS.get(spec)
        if want is None:
            continue
        if draft is None:
            return f"--spec-type {spec} needs a draft model (-md) of architecture {want}; the arm gives none"
        if draft.architecture != want:
            return f"--spec-type {spec} needs a draft of architecture {want}; {draft.path} is {draft.architecture}"
        if target is not None:
            found = _head_vs_target(spec, draft, target)
            if found:
                return found
    return None


def _head_vs_target(spec: str, draft: ModelInfo, target: ModelInfo) -> str | None:
    hidden = draft.target_hidden_size if draft.architecture == "eagle3" else draft.n_embd
    if hidden is not None and target.n_embd is not None and hidden != target.n_embd:
        what = "target_hidden_size" if draft.architecture == "eagle3" else "hidden size"
        return (
            f"--spec-type {spec}: draft {draft.path} ({draft.architecture}) has {what} {hidden} but target "
            f"{target.path} ({target.architecture}) has hidden size {target.n_embd}; use a draft made for "
            f"that target"
        )
    layers = draft.target_layers or []
    # llama.cpp counts a target's layers without its MTP blocks; layer id k is the input of layer k, n the output.
    n_layer = target.n_layers - (target.nextn_layers or 0) if target.n_layers is not None else None
    if layers and n_layer is not None and max(layers) > n_layer:
        return (
            f"--spec-type {spec}: draft {draft.path} ({draft.architecture}) reads target layer {max(layers)} "
            f"but target {target.path} ({target.architecture}) has {n_layer} layers; use a draft made for "
            f"that target"
        )
    return None
