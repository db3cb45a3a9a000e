"""The generated text of a CLI run, read from its stdout, and where two generated texts first differ.

The completion tools (llama-completion, llama-speculative-simple, llama-speculative, llama-lookup, and
llama-cli run with -no-cnv) print the prompt as they detokenized it, then the generation, on stdout; logs go
to stderr. The prompt is known from the argv (-p), so the generated text is what follows its first occurrence,
trailing whitespace left out (the tools end with blank lines). Where that cannot be done safely the answer is
None and nothing is compared: a prompt given by file, a prompt the tool did not print back verbatim (its
detokenization changed it), and llama-cli in conversation mode (the default since 2025: it applies the chat
template, so its text is another conversation than a completion tool's). The prompt itself never becomes
part of the text compared.

Lengths may differ where the texts agree: llama-speculative-simple stops after the pass that reaches -n, so it
may print up to a draft window more tokens than llama-completion. Two texts agree when the shorter is a prefix
of the longer; positions are in characters of the generated text, and in tokens where the model's tokenizer read
both texts again (models/tokens.py, stored by store/parity.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

# Programs whose stdout is prompt + generation (llama-cli only with -no-cnv / --no-conversation).
RAW_PRINTERS = (
    "llama-completion",
    "llama-speculative-simple",
    "llama-speculative",
    "llama-lookup",
    "llama-lookup-stats",
    "llama-cli",
    "main",
)
NO_CONVERSATION = ("-no-cnv", "--no-conversation")
TEMPERATURE_FLAGS = ("--temp", "--temperature")
PROMPT_FLAGS = ("-p", "--prompt")
CLI_STATS_LINE = "\n[ Prompt: "  # llama-cli's timing line after a reply


def _value(argv: list[str], flags: tuple[str, ...]) -> str | None:
    """The value of the last of these flags in argv (llama.cpp's parser keeps the last), in `-f v` or `-f=v`."""
    found = None
    for i, arg in enumerate(argv):
        if arg in flags and i + 1 < len(argv):
            found = argv[i + 1]
        elif "=" in arg and arg.split("=", 1)[0] in flags:
            found = arg.split("=", 1)[1]
    return found


def is_greedy(argv: list[str]) -> bool:
    """The run samples greedily: --temp 0 (or below), or --top-k 1. llama.cpp's tools default to temperature
    0.8 (llama-speculative-simple too), so a run that sets neither is not greedy."""
    temp, top_k = _value(argv, TEMPERATURE_FLAGS), _value(argv, ("--top-k",))
    try:
        if temp is not None and float(temp) <= 0:
            return True
        return top_k is not None and int(top_k) == 1
    except ValueError:
        return False


def prompt_of(argv: list[str]) -> str | None:
    """The prompt given on the command line (-p), or None."""
    return _value(argv, PROMPT_FLAGS)


def generated_text(stdout: str, argv: list[str]) -> str | None:
    """The text the run generated (see the module docstring), or None where it cannot be told apart safely."""
    if not argv or PurePath(argv[0]).name not in RAW_PRINTERS:
        return None
    if PurePath(argv[0]).name == "llama-cli" and not any(a in NO_CONVERSATION for a in argv):
        return None
    prompt = prompt_of(argv)
    if not prompt:
        return None
    at = stdout.find(prompt)
    if at < 0:
        return None
    text = stdout[at + len(prompt) :]
    cut = text.find(CLI_STATS_LINE)
    return (text[:cut] if cut >= 0 else text).rstrip()


def first_difference(a: Sequence, b: Sequence) -> int | None:
    """The first position where two texts (characters) or token lists differ, None where the shorter is a prefix
    of the longer. An empty one differs from a non-empty one at 0 (a run that generated nothing did not agree)."""
    if not a or not b:
        return None if a == b else 0
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None
