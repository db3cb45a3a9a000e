"""sha256 of files (binaries, models) and of text (recipes, prompt sets): the one way orch names content."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def host_fingerprint(hostname: str, cpu_model: str, gpus: list[dict]) -> str:
    """A machine's id (16 hex): its hostname, CPU model and every GPU's UUID (the name where there is no UUID)."""
    import json

    parts = {
        "hostname": hostname,
        "cpu_model": cpu_model,
        "gpus": sorted(g.get("uuid") or g.get("name") or "" for g in gpus),
    }
    return sha256_text(json.dumps(parts, sort_keys=True))[:16]
