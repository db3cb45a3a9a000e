"""A stand-in for PyPI on 127.0.0.1 (a PEP 503 "simple" index: `/simple/<project>/` lists its files by link), and
small wheels laid out like a packaged model's: an assembler with license terms and SHA256SUMS, parts holding the
file's pieces. In-process, no child: unit tests use the wheels, integration tests point pip at the index with
PIP_INDEX_URL. Every request is recorded, so a test can tell a fetch from a cache hit.

    wheels = packaged_model_wheels(tmp_path / "wheels", [b"abc", b"def"])
    with PyPIIndex(wheels.folder) as index:
        env["PIP_INDEX_URL"] = index.url
"""

from __future__ import annotations

import hashlib
import html
import re
import zipfile
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from local_server import LocalServer

NAME = "tiny-packaged"
TERMS = "Tiny Terms of Use: test bytes only.\n"


def normalised(project: str) -> str:
    return re.sub(r"[-_.]+", "-", project).lower()


def make_wheel(folder: Path, project: str, version: str, files: dict[str, bytes]) -> Path:
    """A pure-Python wheel of project==version holding files (paths inside the wheel), as pip can download it."""
    dist = re.sub(r"[-_.]+", "_", project).lower()
    info = f"{dist}-{version}.dist-info"
    meta = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: orch-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    entries = {**files, **meta}
    record = "".join(
        f"{path},sha256={hashlib.sha256(data).hexdigest()},{len(data)}\n" for path, data in entries.items()
    )
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as z:  # stored: a test can damage a part's bytes in place
        for path, data in {**entries, f"{info}/RECORD": (record + f"{info}/RECORD,,\n").encode()}.items():
            z.writestr(path, data)
    return wheel


@dataclass
class ModelWheels:
    folder: Path
    catalogue: str  # the TOML entry naming them
    content: bytes  # the whole file the parts make
    wheels: list[Path]


def packaged_model_wheels(
    folder: Path,
    parts: list[bytes],
    *,
    name: str = NAME,
    version: str = "1.0.0",
    sums_sha256: str | None = None,
    served: list[bytes] | None = None,
    assembler: bool = True,
    pin_wheels: bool = False,
) -> ModelWheels:
    """The wheels of a model made of parts, and its catalogue entry. `served`: other part bytes to put in the wheels
    (a corrupted download) while the catalogue keeps the sha256 of parts; `sums_sha256`: what SHA256SUMS says;
    `assembler=False`: no package of terms and SHA256SUMS (as the Qwen pair's); `pin_wheels`: the entry pins each
    wheel's sha256 as written here."""
    content = b"".join(parts)
    sha256 = hashlib.sha256(content).hexdigest()
    file = f"{name}.gguf"
    pkg = name.replace("-", "_")
    entry = [
        f"[{name}]",
        f'description = "a test model of {len(parts)} parts"',
        f'file = "{file}"',
        f"size = {len(content)}",
        f'sha256 = "{sha256}"',
        'license = "Tiny Terms of Use"',
    ]
    wheels = []
    if assembler:
        wheels.append(
            make_wheel(
                folder,
                f"{name}-gguf",
                version,
                {
                    f"{pkg}/data/SHA256SUMS": f"{sums_sha256 or sha256}  {file}\n".encode(),
                    f"{pkg}/data/TERMS.txt": TERMS.encode(),
                },
            )
        )
        pin = f', sha256 = "{_sha256(wheels[0])}"' if pin_wheels else ""
        entry += [
            f'package = {{ name = "{name}-gguf", version = "{version}"{pin} }}',
            f'sums = "{pkg}/data/SHA256SUMS"',
            f'terms = "{pkg}/data/TERMS.txt"',
        ]
    for i, data in enumerate(served or parts):
        member = f"{pkg}_part{i + 1}/data/{file}.part{i:02d}"
        wheels.append(make_wheel(folder, f"{name}-gguf-part{i + 1}", version, {member: data}))
        entry += [
            "",
            f"[[{name}.parts]]",
            f'name = "{name}-gguf-part{i + 1}"',
            f'version = "{version}"',
            f'member = "{member}"',
        ]
        if pin_wheels:
            entry.append(f'sha256 = "{_sha256(wheels[-1])}"')
    return ModelWheels(folder, "\n".join(entry) + "\n", content, wheels)


class PyPIIndex(LocalServer):
    """Serves the wheels of a folder as a simple index at `url` (`/simple/`), files under `/files/`."""

    def __init__(self, wheels: Path):
        self.root = wheels.parent / f"{wheels.name}-index"
        self._lay_out(wheels)
        self.requests: list[str] = []
        super().__init__(partial(_Handler, self.requests, directory=str(self.root)))

    @property
    def url(self) -> str:
        return f"{self.origin}/simple/"

    def _lay_out(self, wheels: Path) -> None:
        files = self.root / "files"
        files.mkdir(parents=True, exist_ok=True)
        projects: dict[str, list[Path]] = {}
        for wheel in sorted(wheels.glob("*.whl")):
            (files / wheel.name).write_bytes(wheel.read_bytes())
            projects.setdefault(normalised(wheel.name.split("-")[0]), []).append(wheel)
        for project, found in projects.items():
            links = "".join(
                f'<a href="/files/{html.escape(w.name)}#sha256={_sha256(w)}">{html.escape(w.name)}</a>\n' for w in found
            )
            (self.root / "simple" / project).mkdir(parents=True, exist_ok=True)
            (self.root / "simple" / project / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, requests: list[str], *args, **kwargs):
        self._requests = requests
        super().__init__(*args, **kwargs)

    def log_message(self, fmt, *args):  # quiet, and the record a test reads
        self._requests.append(self.path)
