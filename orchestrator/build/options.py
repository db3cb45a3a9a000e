"""Pure decisions about a build: CMake definitions, build directory name, targets, stamp matching."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from orchestrator.errors import BuildFailed, InvalidOption
from orchestrator.hashing import sha256_text

# Every binary orch may run; a commit builds whichever of these it defines.
WANTED_TARGETS = (
    "llama-speculative-simple",
    "llama-speculative",
    "llama-server",
    "llama-cli",
    "llama-completion",
    "llama-bench",
    "llama-quantize",
    "llama-perplexity",
    "llama-tokenize",
)
# Newest first: the first one a tree declares as an option() is its CUDA switch.
CUDA_OPTION_NAMES = ("GGML_CUDA", "LLAMA_CUDA", "LLAMA_CUBLAS")
# Off where the tree has them: tests are not ours to build; curl/openssl would add system dependencies
# for model downloads that orch never does.
OPTIONAL_OFF = ("LLAMA_BUILD_TESTS", "LLAMA_CURL", "LLAMA_OPENSSL")
# Bumped when the mapping from a request to CMake definitions changes, so old stamps stop matching.
SCHEME = 1


@dataclass(frozen=True)
class BuildRequest:
    """What the user asked for; together with the commit it decides the build."""

    commit: str
    upstream_commit: str
    backend: str  # "cpu" or "cuda"
    cuda_archs: tuple[str, ...] = ()
    cuda_arch_explicit: bool = False
    cmake_args: tuple[str, ...] = field(default_factory=tuple)
    # Only these of WANTED_TARGETS (a bisect probe builds what its recipe runs); empty: every one the tree has.
    # Not part of key(): a build with more tools serves a request for fewer, and adding tools is incremental.
    only_targets: tuple[str, ...] = ()

    def key(self) -> dict:
        """What a stamp must match for a cached build to count as this build."""
        return {
            "scheme": SCHEME,
            "commit": self.commit,
            "backend": self.backend,
            "cuda_archs": list(self.cuda_archs),
            "cmake_args": list(self.cmake_args),
        }

    def dir_name(self) -> str:
        """<upstream short sha>-<backend>, plus a hash of the options the user chose, when any."""
        name = f"{self.upstream_commit[:9]}-{self.backend}"
        extras = {
            "cmake_args": list(self.cmake_args),
            "cuda_archs": list(self.cuda_archs) if self.cuda_arch_explicit else [],
        }
        if any(extras.values()):
            digest = sha256_text(json.dumps(extras, sort_keys=True))[:8]
            name += f"-{digest}"
        return name


def parse_cuda_archs(text: str) -> tuple[str, ...]:
    """'8.6,90;89' -> ('86', '89', '90'). Accepts CMake's own spellings (90a, 86-real) unchanged."""
    archs = set()
    for item in re.split(r"[,;\s]+", text.strip()):
        if not item:
            continue
        if re.fullmatch(r"\d+\.\d+", item):
            item = item.replace(".", "")
        if item == "native" or not re.fullmatch(r"\d{2,3}[a-z]?(-real|-virtual)?", item):
            raise InvalidOption(f"--cuda-arch {item!r} is not a compute capability; give e.g. 86 or 8.6 or 90a")
        archs.add(item)
    return tuple(sorted(archs))


def tree_options(src: Path) -> set[str]:
    """Names declared with option() in the tree's top-level and ggml CMake files."""
    names = set()
    for rel in ("CMakeLists.txt", "ggml/CMakeLists.txt"):
        path = src / rel
        if path.exists():
            names.update(re.findall(r"^\s*option\s*\(\s*([A-Z0-9_]+)", path.read_text(errors="replace"), re.M))
    return names


def cuda_option(options: set[str]) -> str:
    for name in CUDA_OPTION_NAMES:
        if name in options:
            return name
    raise BuildFailed(
        f"this llama.cpp tree declares none of {', '.join(CUDA_OPTION_NAMES)}; "
        f"it cannot be built for CUDA by orch, use --backend cpu"
    )


def has_build_commit_override(src: Path) -> bool:
    top = src / "CMakeLists.txt"
    return top.exists() and "NOT DEFINED LLAMA_BUILD_COMMIT" in top.read_text(errors="replace")


def cmake_definitions(request: BuildRequest, options: set[str], *, commit_override: bool) -> dict[str, str]:
    """The -D definitions for this request on a tree declaring `options`."""
    defs = {
        "CMAKE_BUILD_TYPE": "Release",
        # Static binaries: relocatable, and one sha256 covers all the code a run used.
        "BUILD_SHARED_LIBS": "OFF",
    }
    for name in OPTIONAL_OFF:
        if name in options:
            defs[name] = "OFF"
    if request.backend == "cuda":
        defs[cuda_option(options)] = "ON"
        defs["CMAKE_CUDA_ARCHITECTURES"] = ";".join(request.cuda_archs)
    if request.upstream_commit != request.commit and commit_override:
        # A tree imported without its git history would otherwise report the stand-in commit.
        defs["LLAMA_BUILD_COMMIT"] = request.upstream_commit[:9]
    return defs


def configure_argv(
    src: Path, build_dir: Path, defs: dict[str, str], cmake_args: tuple[str, ...], launcher: str | None
) -> list[str]:
    argv = ["cmake", "-S", str(src), "-B", str(build_dir), "-G", "Ninja"]
    argv += [f"-D{k}={v}" for k, v in defs.items()]
    if launcher:
        argv += [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={launcher}" for lang in ("C", "CXX", "CUDA")]
    return argv + list(cmake_args)


def build_argv(build_dir: Path, targets: list[str], jobs: int) -> list[str]:
    return ["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", *targets]


def available_targets(ninja_targets: str, only: tuple[str, ...] = ()) -> list[str]:
    """Which WANTED_TARGETS (or of them, `only` those) a configured tree defines, from `ninja -t targets all`."""
    defined = {line.split(":", 1)[0].strip() for line in ninja_targets.splitlines() if ":" in line}
    return [t for t in WANTED_TARGETS if t in defined and (not only or t in only)]


def stamp_matches(stamp: dict | None, request: BuildRequest) -> bool:
    """The stamp is of this request's build, and has every tool it asks for (a partial build has only some)."""
    if not stamp or stamp.get("key") != request.key():
        return False
    if not stamp.get("partial"):
        return True
    # A tool asked for before that the tree does not define (llama-cli beside llama-completion) counts as had
    had = set(stamp.get("targets") or []) | set(stamp.get("asked") or [])
    return bool(request.only_targets) and set(request.only_targets) <= had


def stamp_for(request: BuildRequest, defs: dict[str, str], targets: list[str]) -> dict:
    return {
        "key": request.key(),
        "request": asdict(request),
        "cmake_definitions": defs,
        "targets": targets,
        "partial": bool(request.only_targets),
        "asked": list(request.only_targets),
    }
