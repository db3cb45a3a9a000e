"""Prompt sets for server runs: `{id, category, prompt}` records from JSONL or TOML, or a built-in set: "default"
(instructions, for chat models) or "base" (openings a pretrained base model continues: a code edit, a list that
repeats, prose, a fact; the texts of recipes/workloads and two more)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from orchestrator import input_files
from orchestrator.errors import RecipeError
from orchestrator.hashing import sha256_text

DEFAULT = "default"
BUILT_IN = {DEFAULT: "data/prompts.jsonl", "base": "data/prompts_base.jsonl"}


@dataclass(frozen=True)
class Prompt:
    id: str
    category: str
    prompt: str


def load(source: str | Path = DEFAULT) -> tuple[str, list[Prompt]]:
    """(name, prompts) of a prompt set: "default" or "base" (built in), a .jsonl file, or a .toml file with
    [[prompts]]."""
    if str(source) in BUILT_IN:
        text = resources.files("orchestrator").joinpath(BUILT_IN[str(source)]).read_text()
        where = f"built-in prompts {source}"
        return str(source), _from_records(_jsonl(text, where), where)
    path = Path(source)
    named = input_files.Named(
        "prompt set",
        "give a .jsonl or .toml file",
        RecipeError,
        missing=f"give a .jsonl or .toml file, or a built-in set: {', '.join(BUILT_IN)}",
    )
    if path.suffix == ".toml":
        records = input_files.read_named_toml(path, named).get("prompts", [])
    else:
        records = _jsonl(input_files.read_named_text(path, named), str(path))
    return str(path), _from_records(records, str(path))


def _jsonl(text: str, where: str) -> list[dict]:
    records = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RecipeError(f"{where}:{n}: not a JSON object ({exc.msg})") from None
            except RecursionError:
                raise RecipeError(f"{where}:{n}: nests arrays or objects too deep to read") from None
    return records


def _from_records(records: list, where: str) -> list[Prompt]:
    prompts = []
    for n, rec in enumerate(records, start=1):
        if not isinstance(rec, dict) or not isinstance(rec.get("prompt"), str) or not rec["prompt"]:
            raise RecipeError(f"{where}: record {n} needs a non-empty string `prompt`")
        prompts.append(Prompt(id=str(rec.get("id", n)), category=str(rec.get("category", "")), prompt=rec["prompt"]))
    if not prompts:
        raise RecipeError(f"{where}: no prompts")
    if len({p.id for p in prompts}) != len(prompts):
        raise RecipeError(f"{where}: prompt ids must be unique")
    return prompts


def identity(name: str, items: list[Prompt]) -> str:
    """What compare joins on: the set's name and a hash of its records (an edited file is another set)."""
    digest = sha256_text(json.dumps([[p.id, p.category, p.prompt] for p in items]))
    return f"{Path(name).name}@{digest[:12]}"
