"""The `orch` command line: the click group and one module per command family, each command a thin wrapper.

group.py holds `main`; importing a family's module registers its commands on it.
"""

from orchestrator.cli import (  # noqa: F401  (register their commands)
    bisect,
    build,
    compare,
    database,
    exchange,
    models,
    probe,
    query,
    results,
    run,
    sweeps,
    tools,
    tune,
    watch,
)
from orchestrator.cli.group import main

__all__ = ["main"]
