"""What a model value in a recipe means: a local path, or a Hugging Face reference to fetch.

    /data/qwen3-4b-q4_k_m.gguf              a file (absolute)
    ~/models/qwen3-4b-q4_k_m.gguf           a file under the home directory
    qwen3-4b-q4_k_m.gguf                    a file in the models directory (`{{ models }}/{{ target }}`)
    hf:Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf   a file of a Hugging Face repo
    Qwen/Qwen3-4B-GGUF:Q4_K_M               the repo's GGUF of that quantisation (llama.cpp's `-hf` spelling);
    hf:Qwen/Qwen3-4B-GGUF:Q4_K_M, hf:Qwen/Qwen3-4B-GGUF   the same with the prefix; no quant: Q4_K_M, else Q8_0

Pure text rules, shared by the renderer (a value that stands alone is not joined onto `{{ models }}/`) and by
models/resolve, which finds or fetches the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.errors import HubError

HUB_PREFIX = "hf:"
# llama.cpp's -hf: OWNER/REPO[:QUANT]. The colon is what tells it from a relative path.
_REPO = r"[A-Za-z0-9][\w.-]*/[\w.-]+"
_TAGGED = re.compile(rf"({_REPO}):([\w.-]+)")
DEFAULT_QUANTS = ("Q4_K_M", "Q8_0")  # llama.cpp's choice when a reference names no quant
SPELLINGS = "hf:OWNER/REPO/FILE.gguf, hf:OWNER/REPO:QUANT or OWNER/REPO:QUANT"


@dataclass(frozen=True)
class HubRef:
    text: str  # as written in the recipe, --vars or --set
    repo: str  # OWNER/REPO
    file: str | None = None  # a path in the repo, or None: pick by quant
    quant: str | None = None  # None with file None: DEFAULT_QUANTS


def parse_hub(value: str) -> HubRef | None:
    """The reference value makes, or None for a local path; HubError for an `hf:` value that is none of the
    spellings."""
    if not value.startswith(HUB_PREFIX):
        tagged = _TAGGED.fullmatch(value)
        return HubRef(value, tagged.group(1), quant=tagged.group(2)) if tagged else None
    rest = value[len(HUB_PREFIX) :]
    if tagged := _TAGGED.fullmatch(rest):
        return HubRef(value, tagged.group(1), quant=tagged.group(2))
    parts = rest.split("/")
    if len(parts) >= 2 and re.fullmatch(_REPO, "/".join(parts[:2])):
        if len(parts) == 2:
            return HubRef(value, rest)
        file = "/".join(parts[2:])
        if file.endswith(".gguf") and "" not in parts[2:] and ".." not in parts[2:]:
            return HubRef(value, "/".join(parts[:2]), file=file)
    raise HubError(f"{value} is not a Hugging Face model reference: write {SPELLINGS}")


def stands_alone(value: str) -> bool:
    """A value that names its file by itself: joined onto `{{ models }}/` it replaces the directory, as an absolute
    component does in os.path.join."""
    return value.startswith(("/", "~", HUB_PREFIX)) or bool(_TAGGED.fullmatch(value))
