"""What a compiled tree's binaries say of themselves: each one's sha256, --version and --help (saved under probe/),
checked to name the upstream commit; and the compiler CMake found. A build counts only once every binary answered."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator import proc
from orchestrator.errors import ProbeFailed
from orchestrator.hashing import sha256_file
from orchestrator.parse.version import parse_version_text

BUILD_LOG = "build.log"  # in the build directory: configure, compile, and what went wrong
PROBE_TIMEOUT_S = 60


def probe_all(bdir: Path, targets: list[str], upstream: str) -> list[dict]:
    """Probe every binary; the build counts only if one names the upstream commit and none names another."""
    binaries = [probe(bdir, name) for name in targets]
    probe_commits(bdir, binaries, upstream)
    return binaries


def probe_commits(bdir: Path, binaries: list[dict], upstream: str, allow_none: bool = False) -> None:
    reported = {b["reported_commit"] for b in binaries if b["reported_commit"]}
    wrong = sorted(c for c in reported if not upstream.startswith(c))
    if wrong or not (reported or allow_none):
        raise ProbeFailed(
            f"the binaries in {bdir / 'bin'} report commit {', '.join(wrong) or 'none'}, not the "
            f"upstream commit {upstream[:9]}; the build cannot be identified: report this to orch"
        )


def probe(bdir: Path, name: str) -> dict:
    """sha256, --version and --help of one binary, saved under probe/."""
    exe = bdir / "bin" / name
    if not exe.exists():
        raise ProbeFailed(f"{name} was not produced in {exe.parent}; see {bdir / BUILD_LOG}")
    probe_dir = bdir / "probe"
    probe_dir.mkdir(exist_ok=True)
    version = proc.run([str(exe), "--version"], capture=True, timeout=PROBE_TIMEOUT_S)
    version_text = (version.stdout + version.stderr).strip()
    parsed = (parse_version_text(version_text, keep_unknown=True) if version.ok else None) or {}
    if not version.ok:
        # llama-bench learned --version only in September 2026: older ones print usage and exit 1.
        version_text = f"(--version not supported: {version.describe()})"
    helped = proc.run([str(exe), "--help"], capture=True, timeout=PROBE_TIMEOUT_S)
    help_text = helped.stdout + helped.stderr
    if helped.signal is not None or helped.timed_out:
        raise ProbeFailed(f"{exe} --help failed ({helped.describe()}); the binary does not run here")
    (probe_dir / f"{name}.version.txt").write_text(version_text + "\n")
    (probe_dir / f"{name}.help.txt").write_text(help_text)
    return {
        "name": name,
        "path": str(exe),
        "sha256": sha256_file(exe),
        "version_text": version_text,
        "build_number": parsed.get("build_number"),
        "reported_commit": parsed.get("commit"),
        "built_with": parsed.get("built_with"),
        "help_path": str(probe_dir / f"{name}.help.txt"),
    }


def compiler(bdir: Path) -> dict:
    """Compiler id and version as CMake detected them."""
    out = {"compiler": None, "compiler_version": None}
    for path in sorted((bdir / "CMakeFiles").glob("*/CMakeCXXCompiler.cmake")):
        text = path.read_text(errors="replace")
        cid = re.search(r'set\(CMAKE_CXX_COMPILER_ID "([^"]*)"\)', text)
        ver = re.search(r'set\(CMAKE_CXX_COMPILER_VERSION "([^"]*)"\)', text)
        out = {"compiler": cid.group(1) if cid else None, "compiler_version": ver.group(1) if ver else None}
    return out
