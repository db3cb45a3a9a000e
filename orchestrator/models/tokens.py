"""A run's generated text as its target model's tokenizer reads it, for parity's first differing token.

The tokenizer is the run's own build's llama-tokenize (beside the binary the run ran), on the run's -m file: it
loads the vocabulary only, not the weights (about 0.1 s for Gemma's 262k entries). The texts are read again from
what the runs printed, so a word may split otherwise than the model generated it; both texts are read alike, so
the first differing token is where the two outputs part. None wherever that cannot be had: a build without
llama-tokenize, a model file no longer there, a tokenizer that fails.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from orchestrator import proc
from orchestrator.recipe import argv as flags

TOOL = "llama-tokenize"
TIMEOUT_S = 60.0
_IDS = re.compile(r"^\[([-\d,\s]*)\]\s*$", re.M)


class RunTokenizer:
    """tokenize(text, argv) -> token ids, cached by (tool, model, text): a sweep's partner runs share texts."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], list[int] | None] = {}

    def __call__(self, text: str, argv: list[str]) -> list[int] | None:
        model = flags.flag_value(argv, flags.TARGET_MODEL) if argv else None
        if not model:
            return None
        tool = Path(argv[0]).with_name(TOOL)
        key = (str(tool), model, text)
        if key not in self._seen:
            self._seen[key] = token_ids(tool, Path(model), text)
        return self._seen[key]


def token_ids(tool: Path, model: Path, text: str) -> list[int] | None:
    """The ids llama-tokenize gives text with model's vocabulary (no BOS), or None where it cannot say."""
    if not tool.is_file() or not model.is_file():
        return None
    # The text goes by file: it may start with '-' or be longer than an argument may be.
    with tempfile.TemporaryDirectory(prefix="orch-tokens-") as tmp:
        text_file = Path(tmp) / "text"
        text_file.write_text(text, encoding="utf-8")
        result = proc.run(
            [tool, "-m", model, "-f", text_file, "--ids", "--no-bos", "--no-escape", "--log-disable"],
            capture=True,
            timeout=TIMEOUT_S,
        )
    found = _IDS.findall(result.stdout) if result.ok else []
    if not found:
        return None
    return [int(t) for t in found[-1].split(",") if t.strip()]
