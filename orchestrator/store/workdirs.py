"""orch's own work directories: where a sweep's run logs grow, a Ray round's shard is made, an import is staged;
and the partial files of a download, beside where the whole file will be (partial_file, remove_dead_partials).

They all live in one root, `$ORCH_CACHE/work`, under names that carry their kind and owner (proc.work_dir_prefix).
So the next orch can remove what a dead one left behind, and nothing else: recovery never removes or reads a path
outside this root, or one whose name carries another owner than the sweep row names (a row may come from an
import, and imports are data, never instructions).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator import config, proc


def work_root() -> Path:
    return config.cache_dir() / "work"


def make(kind: str) -> Path:
    """A new work directory of this kind, owned (by name) by this process."""
    root = work_root()
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=proc.work_dir_prefix(proc.this_process(), kind), dir=root))


@contextmanager
def temporary(kind: str) -> Iterator[Path]:
    """`with temporary("import") as work:` a work directory removed when the block ends (a SIGKILL leaves it for
    remove_orphans)."""
    path = make(kind)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def owned_by(path: Path | str | None, owner: proc.Owner | None) -> bool:
    """Whether path is a work directory directly in the root whose name carries exactly this owner."""
    if not path or owner is None:
        return False
    path = Path(path)
    named = proc.work_dir_owner(path.name)
    try:
        inside = path.parent.resolve() == work_root().resolve() and not path.is_symlink()
    except OSError:
        return False
    return inside and named is not None and proc.same_owner(named, owner)


def remove_orphans() -> list[Path]:
    """Work directories whose orch died before any row named them (killed between making the directory and
    storing the sweep, or during an import or a shard): no database leads to them, but their names carry their
    owner. Those of dead owners on this host go; the removed paths."""
    root = work_root()
    gone = []
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        owner = proc.work_dir_owner(path.name)
        if owner is not None and path.is_dir() and not path.is_symlink() and owner.alive() is False:
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path)
    return gone


def partial_prefix() -> str:
    """How a partial download of this process is named (hidden, its owner in the name): `.part-HOST--PID-START-`."""
    return "." + proc.work_dir_prefix(proc.this_process(), "part")


def partial_file(folder: Path, name: str) -> Path:
    """An empty file in folder to write `name` into before renaming it over `name`: a SIGKILL leaves it for the next
    call's remove_dead_partials."""
    fd, path = tempfile.mkstemp(prefix=partial_prefix(), suffix=f".{name}.part", dir=folder)
    os.close(fd)
    return Path(path)


def remove_dead_partials(folder: Path) -> list[Path]:
    """The partial downloads in folder whose orch died on this host (a kill mid-download left a file as large as
    the model): removed, with the paths returned; a live orch's and any other file are left alone."""
    gone = []
    for path in sorted(folder.glob(".part-*")) if folder.is_dir() else ():
        owner = proc.work_dir_owner(path.name[1:])
        if owner is not None and not path.is_symlink() and owner.alive() is False:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
            gone.append(path)
    return gone
