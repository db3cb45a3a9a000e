"""A full disk as orch reports it: any error whose cause is "no space left" (or a quota), however deep in the chain
DuckDB or a ROLLBACK after it wrapped it, becomes one line naming the file, its file system and the space left."""

from __future__ import annotations

import errno
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.errors import DiskFull

FULL = (errno.ENOSPC, errno.EDQUOT)
FULL_WORDS = ("no space left on device", "disk quota exceeded")
ROOM_FOR_A_FILE = 1 << 20  # less free than this where a new file could not be made: the disk is why
QUOTED_PATH = re.compile(r"""["'](/[^"'\\]+)""")


def no_space(exc: BaseException | None) -> BaseException | None:
    """The error in exc's chain (its cause and context) that says the disk is full, or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL or any(w in str(exc).lower() for w in FULL_WORDS):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def full(exc: BaseException, where: Path | None = None) -> DiskFull:
    """One line for a write that found no space: the file it names (else `where`), its file system and free space."""
    found = QUOTED_PATH.search(str(exc))
    path = Path(getattr(exc, "filename", None) or (found.group(1) if found else None) or where or Path.cwd())
    probe = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    usage = shutil.disk_usage(probe)
    return DiskFull(
        f"no space left on the file system of {path} ({_size(usage.free)} free of {_size(usage.total)}): free some "
        f"space there, or write elsewhere (--db, --out, $TMPDIR); what was stored before is kept"
    )


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@contextmanager
def writing(out: Path) -> Iterator[None]:
    """A command making files under the folder `out`: where it fails, whatever it made there goes (the folder too,
    where it made it), and a full disk is DiskFull naming `out`."""
    existed = out.is_dir()
    before = set(out.iterdir()) if existed else set()
    try:
        yield
    except BaseException as exc:
        for made in set(out.iterdir()) - before if out.is_dir() else ():
            shutil.rmtree(made, ignore_errors=True) if made.is_dir() and not made.is_symlink() else made.unlink()
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        if cause := no_space(exc):
            raise full(cause, out) from None
        raise
