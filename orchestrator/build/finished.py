"""A finished llama.cpp build as every stage above build/ sees it: its name, commits and backend, where its tools
and their help texts lie, and whether it can run. build/on_disk.py reads one from build.json; the whole record it
came from travels with it (`record`) for the results file and provenance, which keep every field."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Binary:
    """One tool of a build: llama-server, llama-speculative-simple, ..."""

    name: str
    path: str
    help_path: str | None  # its --help text, captured when it was built: the flag dialect is read from it


@dataclass(frozen=True)
class Build:
    """A complete build on disk, its paths resolved where it lies now."""

    name: str  # e.g. 0c1e57098-cpu: what `--build` names and the results file keeps
    id: str  # name@started: one attempt at that build
    dir: str
    bin_dir: str
    commit: str  # what was compiled (a mirror commit; an imported sdist's own)
    upstream_commit: str  # the llama.cpp commit it is, wherever the source came from
    backend: str  # cpu or cuda
    finished_at: str
    targets: tuple[str, ...]
    binaries: tuple[Binary, ...]
    broken: tuple[str, ...] = ()  # what keeps it from running; empty when it runs
    rebuild: str | None = None  # the command that mends a broken build
    src_dir: str | None = None  # the source tree it was compiled from (its vocab files make tiny models)
    record: dict = field(default_factory=dict, compare=False, repr=False)  # build.json, paths resolved: as_stored

    @classmethod
    def from_record(
        cls, record: dict, *, broken: list[str] | tuple[str, ...] = (), rebuild: str | None = None
    ) -> Build:
        return cls(
            name=record["name"],
            id=record.get("id") or record["name"],
            dir=record["dir"],
            bin_dir=record.get("bin_dir") or str(Path(record["dir"]) / "bin"),
            commit=record["commit"],
            upstream_commit=record.get("upstream_commit") or record["commit"],
            backend=record.get("backend") or "cpu",
            finished_at=record.get("finished_at") or "",
            targets=tuple(record.get("targets") or ()),
            binaries=tuple(Binary(b["name"], b["path"], b.get("help_path")) for b in record.get("binaries", [])),
            broken=tuple(broken),
            rebuild=rebuild,
            src_dir=record.get("src_dir"),
            record=record,
        )

    @property
    def cuda(self) -> bool:
        return self.backend == "cuda"

    def tool(self, name: str) -> str | None:
        """The path of its `name` binary, or None when it was not built."""
        return next((b.path for b in self.binaries if b.name == name), None)

    def help_texts(self) -> dict[str, str]:
        """Each binary's --help text, by name; a text whose file is gone is left out (a runnable build has every
        one: paths.problems names a missing help file as breaking the build)."""
        texts = {}
        for b in self.binaries:
            try:
                texts[b.name] = Path(b.help_path).read_text(errors="replace")
            except (OSError, TypeError):  # gone, or never captured (None)
                continue
        return texts

    def as_stored(self) -> dict:
        """Every field its build.json holds (paths resolved): what the results file, provenance and `orch builds
        --json` keep, beyond the fields orch reads."""
        return dict(self.record)

    def described(self) -> dict:
        """What `{{ build }}` holds in a recipe."""
        return {
            "commit": self.commit,
            "upstream_commit": self.upstream_commit,
            "backend": self.backend,
            "name": self.name,
        }
