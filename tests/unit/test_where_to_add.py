"""docs/where-to-add.md names real files and quotes the layer order the import contract enforces."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "where-to-add.md").read_text()


def test_every_path_the_page_names_exists():
    named = set(re.findall(r"`((?:orchestrator|tests|docs)/[\w/.<>-]+|README\.md|pyproject\.toml)`", PAGE))
    assert len(named) > 25
    for path in named:
        if "<" in path:  # a pattern such as orchestrator/cli/<family>.py: its folder exists
            assert (ROOT / path.split("<")[0]).is_dir(), path
        else:
            assert (ROOT / path).exists(), f"docs/where-to-add.md names {path}, which does not exist"


def test_every_symbol_the_page_names_is_in_the_file_it_names():
    for path, symbols in re.findall(r"`(orchestrator/[\w/]+\.py)`: ([^\n]*)", PAGE):
        text = (ROOT / path).read_text()
        for symbol in re.findall(r"`([A-Z_]{4,}|[a-z_]+_[a-z_]+)`", symbols):
            assert symbol in text, f"{symbol} is not in {path}"


def test_the_layer_order_is_the_import_contracts():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [
        " | ".join(sorted(part.strip().removeprefix("orchestrator.") for part in layer.split("|")))
        for layer in contract["layers"]
    ]
    quoted = PAGE.split("enforces it:", 1)[1].split("\n\n", 2)[1]
    shown = [
        " | ".join(sorted(part.strip() for part in step.split("|")))
        for step in re.split(r"\s*->\s*", " ".join(quoted.split()))
    ]
    assert shown == layers
