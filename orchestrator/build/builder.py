"""CMake configure + build of one (commit, backend, options), its completion stamp, probes and provenance.

A build directory counts only once `orch-stamp.json` exists: it is written last, after the compile and
after every binary answered `--version`. A failed or interrupted build keeps its log and gets no stamp.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import config, proc, store
from orchestrator.build import additions, binary_probe, options, paths
from orchestrator.build.binary_probe import BUILD_LOG
from orchestrator.build.finished import Build
from orchestrator.build.on_disk import BUILD_JSON, STAMP, load_build, read_build, read_stamp, runnable_build
from orchestrator.build.options import BuildRequest
from orchestrator.build.progress import CompileProgress
from orchestrator.errors import BackendUnavailable, BuildBroken, BuildFailed, Interrupted, ProbeFailed
from orchestrator.long_step import Phase, StatusLine
from orchestrator.machine import gpu
from orchestrator.source.mirror import Mirror, resolve_commit
from orchestrator.source.sdist import importer_for
from orchestrator.store import queries
from orchestrator.tables import clock


def choose_backend(requested: str) -> str:
    if requested == "cpu":
        return "cpu"
    has_nvcc = gpu.nvcc_path() is not None
    if requested == "cuda":
        if not has_nvcc:
            raise BackendUnavailable(
                "--backend cuda needs the CUDA toolkit, but nvcc is not on PATH; "
                "install the toolkit or add its bin/ to PATH, or use --backend cpu"
            )
        return "cuda"
    return "cuda" if has_nvcc and gpu.visible_gpus() else "cpu"


def cuda_archs(explicit: str | None) -> tuple[str, ...]:
    if explicit:
        return options.parse_cuda_archs(explicit)
    archs = tuple(sorted({g.compute_capability for g in gpu.visible_gpus()}))
    if not archs:
        # Never `native` without a GPU: CMake would fail or guess; make the user say what to build for.
        raise BackendUnavailable(
            "no GPU is visible through NVML to read the compute capability from; "
            "pass --cuda-arch (e.g. 86 for an RTX 3090, 90 for an H100)"
        )
    return archs


def build(
    ref: str,
    *,
    backend: str = "auto",
    cuda_arch: str | None = None,
    cmake_args: tuple[str, ...] = (),
    force: bool = False,
    source: str | None = None,
    db: Path | None = None,
    only_targets: tuple[str, ...] = (),
) -> Build:
    """Build llama.cpp at ref (or return the cached build).

    only_targets: build just these tools (a cached build with them, or with every tool, serves).
    """
    root = config.builds_root()
    mirror = Mirror(config.mirror_dir())
    chosen = choose_backend(backend)
    archs = cuda_archs(cuda_arch) if chosen == "cuda" else ()
    resolved = resolve_commit(ref, mirror, source or config.upstream_remote(), import_sdist=importer_for(mirror, root))
    request = BuildRequest(
        commit=resolved.commit,
        upstream_commit=resolved.upstream_commit,
        backend=chosen,
        cuda_archs=archs,
        cuda_arch_explicit=bool(cuda_arch),
        cmake_args=tuple(cmake_args),
        only_targets=tuple(only_targets),
    )
    bdir = root / request.dir_name()
    if not force and options.stamp_matches(read_stamp(bdir), request):
        found = read_build(bdir)
        if found and not found.broken:
            missing = additions.missing_targets(bdir, list(found.targets))
            if missing:
                return _add_targets(found, missing, db)
            print(f"orch: build {bdir.name} is up to date ({bdir})", file=sys.stderr)
            _register(found.record, db, only_if_missing=True)
            return found
        # From scratch: CMake refuses to reconfigure a copied directory whose cache names the original.
        what = "; ".join(found.broken) if found else f"{BUILD_JSON} unreadable"
        print(f"orch: build {bdir.name} is broken ({what}); rebuilding it from scratch", file=sys.stderr)
        force = True
    elif not force and (read_stamp(bdir) or {}).get("key") == request.key():
        # Same build, a tool more: ninja adds it to the tree in place, the rest is up to date.
        print(f"orch: build {bdir.name} lacks tools asked for; adding them", file=sys.stderr)
    return _fresh_build(request, resolved.origin, mirror, bdir, force=force, db=db)


def _add_targets(found: Build, missing: list[str], db: Path | None) -> Build:
    """Compile the targets this build lacks into it; same id and binaries, provenance says what was added."""
    bdir = Path(found.dir)
    stamp = read_stamp(bdir)
    rebuild = paths.rebuild_command(found.record, stamp.get("request"))
    env = {**os.environ, "CCACHE_BASEDIR": os.environ.get("CCACHE_BASEDIR", str(config.builds_root()))}
    added = additions.add_targets(
        bdir, missing, Path(found.record["log_path"]), rebuild, env, _step, binary_probe.probe
    )
    binary_probe.probe_commits(bdir, added["binaries"], found.upstream_commit, allow_none=True)
    info = dict(found.record)
    info["binaries"] = [*info["binaries"], *added["binaries"]]
    info["targets"] = [*info["targets"], *missing]
    info["additions"] = [*info.get("additions", []), {k: v for k, v in added.items() if k != "binaries"}]
    _write_json(bdir / BUILD_JSON, paths.for_file(info))
    _write_json(bdir / STAMP, {**stamp, "targets": info["targets"]})
    _register(info, db)  # same build id: rows of runs made with it stay valid
    print(f"orch: added {', '.join(missing)} to {bdir.name} in {clock(added['duration_s'])}", file=sys.stderr)
    return load_build(bdir)


def _fresh_build(
    request: BuildRequest, origin: str, mirror: Mirror, bdir: Path, *, force: bool, db: Path | None
) -> Build:
    if force and bdir.exists():
        shutil.rmtree(bdir)
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / STAMP).unlink(missing_ok=True)  # an interrupted rebuild must never look complete
    log = bdir / BUILD_LOG
    log.write_text("")
    started = datetime.now(UTC)
    info = {
        "id": f"{bdir.name}@{started:%Y%m%dT%H%M%SZ}",
        "name": bdir.name,
        "commit": request.commit,
        "upstream_commit": request.upstream_commit,
        "source": origin,
        "backend": request.backend,
        "cuda_archs": list(request.cuda_archs),
        "cmake_args": list(request.cmake_args),
        "dir": str(bdir),
        "bin_dir": str(bdir / "bin"),
        "log_path": str(log),
        "started_at": started.isoformat(),
        "status": "failed",
        "binaries": [],
    }
    print(f"orch: building {request.upstream_commit[:9]} ({request.backend}) in {bdir}; log: {log}", file=sys.stderr)
    try:
        _configure_compile_probe(request, mirror, bdir, log, info)
    except KeyboardInterrupt:
        _finish(info, "interrupted", "interrupted by the user", db)
        _say_total(bdir, "interrupted", info)
        raise Interrupted(
            f"build of {bdir.name} interrupted; the compiler was stopped and the directory "
            f"has no stamp (orch will not use it); log: {log}"
        ) from None
    except (BuildFailed, ProbeFailed) as exc:
        _finish(info, "failed", str(exc), db)
        _say_total(bdir, "failed", info)
        raise
    _finish(info, "ok", None, db)
    _write_json(bdir / BUILD_JSON, paths.for_file(info))  # relative: the directory may be moved or copied
    _write_json(bdir / STAMP, options.stamp_for(request, info["cmake_options"], info["targets"]))
    print(f"orch: built {bdir.name} in {clock(info['duration_s'])}: {', '.join(info['targets'])}", file=sys.stderr)
    return load_build(bdir)  # as every later reader sees it


def _say_total(bdir: Path, how: str, info: dict) -> None:
    print(f"orch: build {bdir.name} {how} after {clock(info['duration_s'])}", file=sys.stderr)


def _configure_compile_probe(request: BuildRequest, mirror: Mirror, bdir: Path, log: Path, info: dict) -> None:
    src = mirror.checkout(request.commit, config.builds_root() / "src" / request.commit)
    declared = options.tree_options(src)
    defs = options.cmake_definitions(request, declared, commit_override=options.has_build_commit_override(src))
    launcher = shutil.which("ccache")
    env = {**os.environ}
    if launcher:
        env.setdefault("CCACHE_BASEDIR", str(config.builds_root()))  # cache hits across build directories
    info.update(
        cmake_options=defs,
        ccache=bool(launcher),
        src_dir=str(src),
        cuda_toolkit=gpu.cuda_toolkit_version() if request.backend == "cuda" else None,
    )
    configure = options.configure_argv(src, bdir, defs, request.cmake_args, launcher)
    _step("CMake configure", configure, log, env, bdir)
    listing = proc.run(["ninja", "-C", str(bdir), "-t", "targets", "all"], capture=True, timeout=120)
    targets = options.available_targets(listing.stdout, request.only_targets)
    if not targets:
        raise BuildFailed(
            f"the configured tree in {bdir} defines none of "
            f"{', '.join(request.only_targets or options.WANTED_TARGETS)}; "
            f"see {log}"
        )
    info["targets"] = targets
    _step("compile", options.build_argv(bdir, targets, os.cpu_count() or 1), log, env, bdir)
    info.update(binary_probe.compiler(bdir))
    info["binaries"] = binary_probe.probe_all(bdir, targets, request.upstream_commit)


def _step(what: str, argv: list[str], log: Path, env: dict, bdir: Path) -> None:
    """Run one build command into the log, showing its elapsed time and (from ninja's lines) its steps."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(argv)}\n")
    with Phase(what, StatusLine(), poll=CompileProgress(log).poll):
        res = proc.run(argv, log=log, env=env)
        if not res.ok:
            raise BuildFailed(f"{what} failed for {bdir.name} ({res.describe()}): {_first_error(log)}; full log: {log}")


def _first_error(log: Path) -> str:
    """The line that says why: a CMake error with its explanation, else the compiler's first error."""
    lines = log.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("CMake Error"):
            detail = [ln.strip() for ln in lines[i + 1 : i + 8] if ln.strip()][:3]
            return " ".join([line.strip(), *detail])[:300]
    for pattern in (r": error:", r"^FAILED:", r"\berror\b"):
        for line in lines:
            if re.search(pattern, line) and not line.startswith("$ "):
                return line.strip()[:300]
    return "no error line found"


def _finish(info: dict, status: str, failure: str | None, db: Path | None) -> None:
    finished = datetime.now(UTC)
    info.update(
        status=status,
        failure=failure,
        finished_at=finished.isoformat(),
        duration_s=(finished - datetime.fromisoformat(info["started_at"])).total_seconds(),
    )
    info.setdefault("cmake_options", {})
    info.setdefault("targets", [])
    _register(info, db)


def _register(info: dict, db: Path | None, only_if_missing: bool = False) -> None:
    with store.opened(db or config.db_path()) as con:
        _record(con, info, only_if_missing=only_if_missing)


def register(con, build: Build, *, only_if_missing: bool = False) -> None:
    """Record a finished build (and its binaries' help texts) in a results database."""
    _record(con, build.record, only_if_missing=only_if_missing)


def _record(con, info: dict, *, only_if_missing: bool) -> None:
    """A build attempt as build.json describes it (a failed one too) into the results database."""
    if only_if_missing and queries.build_recorded(con, info["id"]):
        return
    rows = dict(
        info, binaries=[dict(b, help_text=Path(b["help_path"]).read_text(errors="replace")) for b in info["binaries"]]
    )
    store.record_build(con, paths.for_database(rows))


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)  # atomic: a stamp is either whole or absent


def tool_path(ref: str | None, name: str) -> tuple[Build, str]:
    """(build, path of its `name` binary); a build made before orch needed `name` gets it added in place."""
    found = runnable_build(ref)
    if not found.tool(name):
        missing = additions.missing_targets(Path(found.dir), list(found.targets))
        if name in missing:
            found = _add_targets(found, missing, None)
    exe = found.tool(name)
    if not exe:
        raise BuildBroken(
            f"build {found.name} has no {name} and its source tree does not define it; "
            f"use a newer build (`orch build COMMIT`)"
        )
    return found, exe
