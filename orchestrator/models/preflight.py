"""Checks before launch: model files exist and are GGUF, a draft's vocabulary fits its target, and the models fit
the speculation method asked for (models/spec_fit.py).

llama.cpp itself aborts on a vocabulary mismatch (SIGABRT, current builds) or silently translates
between vocabularies (some older builds); both waste a run or, worse, produce a number. The rules are
llama.cpp's own (models/vocab.py); reading them costs milliseconds even for a 150k-token vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import OrchError, PreflightError
from orchestrator.models import gguf_info, spec_fit, vocab
from orchestrator.recipe import argv as flags
from orchestrator.recipe.argv import flag_value


@dataclass
class ModelsUsed:
    target: gguf_info.ModelInfo | None
    draft: gguf_info.ModelInfo | None


def check(argv: list[str], inspect=gguf_info.inspect) -> ModelsUsed:
    """Inspect the target and draft an argv names; raise PreflightError naming files and difference."""
    used = ModelsUsed(
        target=_inspect(flag_value(argv, flags.TARGET_MODEL), "model", inspect),
        draft=_inspect(flag_value(argv, flags.DRAFT_MODEL), "draft model", inspect),
    )
    if used.target and used.draft:
        differences = vocab.differences(used.target, used.draft)
        if differences:
            raise PreflightError(
                f"draft {used.draft.path} cannot speculate for target {used.target.path}: "
                f"{'; '.join(differences)}; use a draft from the target's model family"
            )
    spec = flag_value(argv, flags.SPEC_TYPE)
    reason = spec_fit.mismatch([t for t in (spec or "").split(",") if t and t != "none"], used.target, used.draft)
    if reason:
        raise spec_mismatch(reason)
    return used


def spec_mismatch(reason: str) -> PreflightError:
    """A PreflightError stored with failure class spec_mismatch (the models do not fit the method)."""
    exc = PreflightError(reason)
    exc.failure_class = "spec_mismatch"
    return exc


def _inspect(path: str | None, what: str, inspect) -> gguf_info.ModelInfo | None:
    if path is None:
        return None
    if not Path(path).is_file():
        raise PreflightError(f"{what} file {path} does not exist; check the path or set ORCH_MODELS / --set")
    try:
        return inspect(path)
    except OrchError as exc:
        raise PreflightError(f"{what} file {path} is not a usable GGUF file ({exc})") from None
