"""A build's file paths: stored relative, used absolute, so a moved or copied builds root keeps working.

build.json lies in its build directory, so its paths are relative to that directory ("bin/llama-cli",
"../src/<commit>"); database rows are relative to the builds root ("0c1e57098-cpu/bin/llama-cli"). Readers
resolve them against where the build lies now. Files written before this hold absolute paths: those are
re-anchored by their place under the directory the build was made in, never used as written, so a copy
never runs the original's binaries.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

TOP_PATHS = ("dir", "bin_dir", "log_path", "src_dir")
BINARY_PATHS = ("path", "help_path")


def relative_to(info: dict, base: Path) -> dict:
    """A copy of a build (absolute paths) with every path relative to base."""

    def rel(p):
        return os.path.relpath(p, base) if p else p

    out = {**info, **{k: rel(info[k]) for k in TOP_PATHS if k in info}}
    out["binaries"] = [{**b, **{k: rel(b[k]) for k in BINARY_PATHS if k in b}} for b in info.get("binaries", [])]
    return out


def for_file(info: dict) -> dict:
    """What build.json holds: paths relative to the build directory."""
    return relative_to(info, Path(info["dir"]))


def for_database(info: dict) -> dict:
    """What the builds and binaries tables hold: paths relative to the builds root (the build dir's parent)."""
    return relative_to(info, Path(info["dir"]).parent)


def resolved(stored: dict, bdir: Path) -> dict:
    """A build read from bdir/build.json, every path absolute where the build lies now."""
    made_in = stored.get("dir")
    made_in = Path(made_in) if made_in and os.path.isabs(made_in) else None

    def place(p):
        if not p:
            return p
        if not os.path.isabs(p):
            return os.path.normpath(bdir / p)
        if made_in and _inside(Path(p), made_in.parent):  # an older, absolute build.json: re-anchor it
            return os.path.normpath(bdir / os.path.relpath(p, made_in))
        return p  # somewhere else entirely: kept, and problems() refuses a binary there

    out = {**stored, **{k: place(stored[k]) for k in TOP_PATHS if k in stored}, "dir": str(bdir)}
    out["binaries"] = [{**b, **{k: place(b[k]) for k in BINARY_PATHS if k in b}} for b in stored.get("binaries", [])]
    return out


def problems(build: dict) -> list[str]:
    """What keeps a resolved build from running: binaries or their --help texts gone, or not runnable here."""
    bdir = Path(build["dir"])
    kinds: dict[str, list[str]] = {}

    def note(kind: str, path: str) -> None:
        shown = os.path.relpath(path, bdir) if _inside(Path(path), bdir) else path
        kinds.setdefault(kind, []).append(shown)

    for b in build.get("binaries", []):
        exe = Path(b["path"])
        if not _inside(exe.resolve(), bdir.resolve()):
            note("outside the build directory", b["path"])  # a symlink or path into another copy
        elif not exe.is_file():
            note("missing", b["path"])
        elif not os.access(exe, os.X_OK):
            note("not executable", b["path"])
        if b.get("help_path") and not Path(b["help_path"]).is_file():
            note("missing", b["help_path"])
    return [f"{kind}: {', '.join(paths)}" for kind, paths in kinds.items()]


def rebuild_command(build: dict, request: dict | None) -> str:
    """The `orch build` line that makes this build again, from scratch, in the same directory."""
    argv = ["orch", "build", build["upstream_commit"][:9], "--backend", build["backend"]]
    if (request or {}).get("cuda_arch_explicit") and build.get("cuda_archs"):
        argv += ["--cuda-arch", ";".join(build["cuda_archs"])]
    argv += [f"--cmake-arg={a}" for a in build.get("cmake_args") or []]
    return shlex.join([*argv, "--force"])


def _inside(path: Path, directory: Path) -> bool:
    path, directory = Path(os.path.normpath(path)), Path(os.path.normpath(directory))
    return path == directory or directory in path.parents
