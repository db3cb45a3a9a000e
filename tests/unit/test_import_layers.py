"""Every module and package directly under orchestrator/ is on a layer of the import-linter contract (pyproject.toml):
`lint-imports` checks only what a layer names, so a module left out could import anything unseen."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_top_level_module_is_on_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c["layers"] for c in config["contracts"] if c["type"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    package = ROOT / "orchestrator"
    modules = {f"orchestrator.{p.stem}" for p in package.glob("*.py") if p.name != "__init__.py"}
    packages = {f"orchestrator.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert modules | packages <= named, sorted((modules | packages) - named)
    assert named <= modules | packages, sorted(named - modules - packages)  # no layer names a module that is gone
