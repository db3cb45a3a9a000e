"""Hugging Face references fetched through `huggingface_hub`, into its own cache.

The library decides where and from where: `HF_ENDPOINT` (a mirror, or a local stand-in in the tests), `HF_HOME` /
`HF_HUB_CACHE` (the cache), `HF_TOKEN` (gated and private repos), `HF_HUB_OFFLINE`. A file fetched once is used
from the cache afterwards, also when the hub cannot be reached. A quant reference (`OWNER/REPO:QUANT`) picks the
repo's GGUF whose name carries the quant, as llama.cpp's `-hf` does, but refuses to guess between several.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import HubError
from orchestrator.message_lines import first_line
from orchestrator.recipe.modelref import DEFAULT_QUANTS, SPELLINGS, HubRef

# llama.cpp's -hf leaves these out when it picks a model file: projectors, importance matrices, sidecar drafts.
NOT_MODELS = ("mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-")
SPLIT_RE = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")
LISTED = 20  # candidates named in an error at most


@dataclass
class Fetched:
    path: str  # the file in the cache's snapshot folder (a link to its blob)
    commit: str | None  # the repo commit it was fetched at
    hub_sha256: str | None  # the hub's sha256 of the file (its LFS etag), None for a small file kept in git

    def note(self, ref: HubRef) -> str:
        at = f" at commit {self.commit[:12]}" if self.commit else ""
        return f"model {ref.text} is {self.path} (Hugging Face{at})"


def is_model_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".gguf") and not any(word in name for word in NOT_MODELS)


def pick(files: list[str], ref: HubRef) -> str:
    """The one model GGUF of the repo that carries the reference's quant (case-insensitive, `Q4_K_M` in
    `x-q4_k_m.gguf` but not in `x-IQ4_K_M.gguf`); without a quant: Q4_K_M, else Q8_0, else the repo's only one."""
    models = [f for f in files if is_model_file(f) and _split_index(f) in (None, 1)]
    for tag in [ref.quant] if ref.quant else DEFAULT_QUANTS:
        pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(tag)}[.-]", re.IGNORECASE)
        matches = [f for f in models if pattern.search(f)]
        if len(matches) > 1:
            raise HubError(
                f"{ref.text}: {len(matches)} files of {ref.repo} match {tag}: {_listed(matches)}; name "
                f"one as hf:{ref.repo}/FILE.gguf"
            )
        if matches:
            return _single_file(matches[0], ref)
    if not ref.quant and len(models) == 1:
        return _single_file(models[0], ref)
    wanted = (
        f"no file of {ref.repo} matches {ref.quant}"
        if ref.quant
        else f"{ref.repo} has no {' or '.join(DEFAULT_QUANTS)} file to default to"
    )
    found = f"its GGUF files: {_listed(models)}" if models else "it has no GGUF model files"
    raise HubError(f"{ref.text}: {wanted}; {found}")


def fetch(ref: HubRef) -> Fetched:
    """The reference's file in huggingface_hub's cache, downloaded when it is not there; HubError naming the
    reference, the endpoint and the fix when it cannot be had."""
    hf = _library()
    file = ref.file or pick(_repo_files(hf, ref), ref)
    if ref.file:
        _single_file(ref.file, ref)
    try:
        path = hf.hf_hub_download(ref.repo, file)
    except hf.errors.RemoteEntryNotFoundError:
        listing = _repo_files(hf, ref, quiet=True)
        found = (
            f"its GGUF files: {_listed([f for f in listing if is_model_file(f)])}"
            if listing
            else "see the repo's file list on the hub"
        )
        raise HubError(f"{ref.text}: {ref.repo} has no file {file} on {_endpoint(hf)}; {found}") from None
    except Exception as exc:  # noqa: BLE001  (HTTP, network, validation, disk: each becomes one line)
        raise _hub_error(hf, ref, exc) from None
    return Fetched(path=path, commit=_snapshot_commit(path, file), hub_sha256=_blob_sha256(path))


def _library():
    """Imported on first use: a recipe of local files never pays for it."""
    import huggingface_hub
    import huggingface_hub.errors  # noqa: F401  (hf.errors below)

    return huggingface_hub


def _repo_files(hf, ref: HubRef, quiet: bool = False) -> list[str]:
    """The repo's files at main: from the hub, else (offline, hub down) from the cache's snapshot of main."""
    try:
        return hf.HfApi().list_repo_files(ref.repo)
    except Exception as exc:  # noqa: BLE001
        if isinstance(exc, hf.errors.RepositoryNotFoundError) or not (cached := _cached_files(hf, ref.repo)):
            if quiet:
                return []
            raise _hub_error(hf, ref, exc) from None
        return cached


def _cached_files(hf, repo: str) -> list[str]:
    folder = Path(hf.constants.HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}"
    main = folder / "refs" / "main"
    if not main.is_file():
        return []
    snapshot = folder / "snapshots" / main.read_text().strip()
    return sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())


def _hub_error(hf, ref: HubRef, exc: Exception) -> HubError:
    where = _endpoint(hf)
    if isinstance(exc, hf.errors.RepositoryNotFoundError):
        why = f"no repo {ref.repo} on {where} (or it is gated or private: set HF_TOKEN)"
    elif hf.constants.HF_HUB_OFFLINE:
        why = (
            f"HF_HUB_OFFLINE is set and the file is not in the cache {hf.constants.HF_HUB_CACHE}; unset it to "
            f"fetch from {where}"
        )
    elif isinstance(exc, hf.errors.LocalEntryNotFoundError) or _is_network(exc):
        why = (
            f"cannot reach {where} and the file is not in the cache {hf.constants.HF_HUB_CACHE} "
            f"(check the network, or HF_ENDPOINT for a mirror)"
        )
    elif isinstance(exc, ValueError):
        why = f"{first_line(exc)}; write {SPELLINGS}"
    else:
        why = f"{where}: {type(exc).__name__}: {first_line(exc)}"
    return HubError(f"cannot fetch {ref.text}: {why}")


def _is_network(exc: Exception) -> bool:
    # httpx2's transport errors and the library's offline mode; matched by name so no HTTP client is imported here
    return any(
        cls.__name__ in ("TransportError", "OfflineModeIsEnabled", "ConnectionError") for cls in type(exc).__mro__
    )


def _endpoint(hf) -> str:
    return hf.constants.ENDPOINT


def _split_index(path: str) -> int | None:
    split = SPLIT_RE.search(path)
    return int(split.group(1)) if split else None


def _single_file(path: str, ref: HubRef) -> str:
    """orch reads a model's size and layers from its one file; the first of a split model would understate both."""
    split = SPLIT_RE.search(path)
    if split and int(split.group(2)) > 1:
        raise HubError(
            f"{ref.text}: {path} is part of a model split in {int(split.group(2))} files; orch measures "
            f"single-file models: merge the parts with llama-gguf-split --merge and point at the file"
        )
    return path


def _listed(files: list[str]) -> str:
    more = f" and {len(files) - LISTED} more" if len(files) > LISTED else ""
    return ", ".join(files[:LISTED]) + more


def _snapshot_commit(path: str, file: str) -> str | None:
    parts = Path(path).parts
    depth = len(file.split("/"))
    return parts[-depth - 1] if len(parts) > depth + 1 and parts[-depth - 2] == "snapshots" else None


def _blob_sha256(path: str) -> str | None:
    """The cache names a blob by its etag: the sha256 for files the hub keeps in LFS (every real GGUF)."""
    name = Path(path).resolve().name
    return name if re.fullmatch(r"[0-9a-f]{64}", name) else None
