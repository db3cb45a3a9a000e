"""Every failure orch reports on purpose: one class per kind, each with its own exit code.

The message names the thing that is wrong and the fix; only the CLI prints it.
"""


class OrchError(Exception):
    exit_code = 1


# 2 is click's own usage-error code; ours start at 3.
class UnknownCommit(OrchError):
    exit_code = 3


class SourceImportError(OrchError):
    """An sdist or remote could not be brought into the mirror."""

    exit_code = 4


class BackendUnavailable(OrchError):
    exit_code = 5


class BuildFailed(OrchError):
    """CMake configure or compile failed; the message points at the log."""

    exit_code = 6


class ProbeFailed(OrchError):
    """The build finished but a binary does not run (`--version` fails)."""

    exit_code = 7


class NoSuchBuild(OrchError):
    exit_code = 8


class Interrupted(OrchError):
    exit_code = 130


class MissingTool(OrchError):
    """A program orch needs (git, cmake, ninja, pip) is not installed."""

    exit_code = 9


class InvalidOption(OrchError):
    """A command-line value orch cannot use."""

    exit_code = 10


class ModelError(OrchError):
    """A model file is missing, is not a GGUF, or cannot serve in the requested role."""

    exit_code = 11


class RecipeError(OrchError):
    """A recipe that cannot be rendered: syntax, unknown variable, bad metadata."""

    exit_code = 12


class DialectError(OrchError):
    """A flag the build does not accept."""

    exit_code = 13


class PreflightError(OrchError):
    """A model file missing, not GGUF, or a draft incompatible with its target."""

    exit_code = 14


class RunsFailed(OrchError):
    """The sweep finished and is stored, but some runs failed or timed out."""

    exit_code = 15
