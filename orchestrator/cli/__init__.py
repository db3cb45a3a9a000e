"""The `orch` command line: the click group and one module per command family, each command a thin wrapper."""

from orchestrator.cli.group import main
from orchestrator.cli import results  # noqa: E402,F401  (registers its commands on main)

__all__ = ["main"]
