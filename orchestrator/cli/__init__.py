"""The `orch` command line: the click group and one module per command family, each command a thin wrapper.

group.py holds `main` and COMMANDS, which names each command's module: a command's module is imported (and its
commands registered on `main`) only when that command is asked for.
"""

from orchestrator.cli.group import main

__all__ = ["main"]
