"""Context-depth prompts: a prompt file of about N tokens cut from orch's evaluation text, so a speed run starts
with N tokens of context already filled (`-f {{ depth_prompt(8192) }}` in a recipe).

Tokens are counted with the evaluation text's own ratio, 2272 tokens in 9,627 characters under the LLaMA
SentencePiece vocabulary (measured with llama-perplexity): another vocabulary gives somewhat more or fewer. The
run's log says how many prompt tokens were really evaluated, and that is what orch stores as the prompt size.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import config
from orchestrator.errors import RecipeError
from orchestrator.hashing import sha256_text

TEXT = Path(__file__).resolve().parent.parent / "data" / "eval" / "declaration.txt"
TEXT_TOKENS = 2272  # of TEXT under the llama-spm vocabulary
MAX_TOKENS = 1 << 21


def prompt_file(n_tokens) -> str:
    """The path of a prompt of about n_tokens tokens (written once under the cache directory)."""
    if not isinstance(n_tokens, int) or isinstance(n_tokens, bool) or not 0 < n_tokens <= MAX_TOKENS:
        raise RecipeError(f"depth_prompt({n_tokens!r}): give a whole number of tokens from 1 to {MAX_TOKENS}")
    text = TEXT.read_text()
    n_chars = round(len(text) * n_tokens / TEXT_TOKENS)
    body = (text * (n_chars // len(text) + 1))[:n_chars]
    path = config.cache_dir() / "prompts" / f"depth-{n_tokens}-{sha256_text(text)[:8]}.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text(body)
        tmp.replace(path)
    return str(path)
