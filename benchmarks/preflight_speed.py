"""How long pre-flight takes on a large vocabulary, and `orch run --dry-run` on the tiny models.

Writes (gguf's GGUFWriter, into a temporary folder) a synthetic target with a 150k-token byte-level BPE
vocabulary (tokens, token types and merges, like Qwen's) and one tiny tensor, plus two drafts: one with the same
vocabulary (the hash settles it) and one with 64 extra tokens (the hashes differ, so the token texts are compared
as llama.cpp does). Prints the metadata read, cold (the file's pages evicted first) and warm, the vocabulary
comparison and the whole pre-flight check of a target/draft argv. With --gguf-reader also the time of gguf's own
GGUFReader on the same file (what orch used before). When $ORCH_BUILDS_DIR and $ORCH_MODELS hold the tiny
models and a build (`make demo-tiny`, or the test cache), the wall time of recipe A's --dry-run too.

    .venv/bin/python benchmarks/preflight_speed.py [--vocab 150000] [--repeat 5] [--build 0c1e570] [--gguf-reader]
                                                   [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gguf
import numpy as np

from orchestrator.models import gguf_info, preflight, vocab
from orchestrator.models.gguf_read import read_header

ROOT = Path(__file__).resolve().parents[1]
ALPHABET = "abcdefghijklmnopqrstuvwxyzĠABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789Ċ_-.,"


def synthetic_vocab(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [f"<|special_{i}|>" if i < 16 else "".join(rng.choices(ALPHABET, k=rng.randint(2, 12))) for i in range(n)]


def write_model(path: Path, tokens: list[str], n_layers: int) -> Path:
    writer = gguf.GGUFWriter(path, "qwen2")
    writer.add_name(path.stem)
    writer.add_block_count(n_layers)
    writer.add_embedding_length(64)
    writer.add_context_length(32768)
    writer.add_head_count(4)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * len(tokens))
    writer.add_token_merges([f"{a} {b}" for a, b in zip(tokens[16::2], tokens[17::2])] * 2)
    writer.add_bos_token_id(11)
    writer.add_eos_token_id(12)
    writer.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def evict(path: Path) -> None:
    """Drop the file's pages from the page cache, so the next read comes from disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(fn, repeat: int, before=None) -> tuple[float, float]:
    """(median, max) seconds of fn over repeat calls; before() runs untimed ahead of each."""
    times = []
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def show(label: str, figures: tuple[float, float]) -> None:
    print(f"  {label:<58} median {figures[0] * 1000:8.1f} ms   max {figures[1] * 1000:8.1f} ms")


def dry_run_time(repeat: int, build: str | None) -> tuple[float, float] | None:
    models = Path(os.environ.get("ORCH_MODELS", "models"))
    if not (models / "tiny-target.gguf").is_file() or "ORCH_BUILDS_DIR" not in os.environ:
        return None
    orch = str(Path(sys.executable).parent / "orch")
    argv = [
        orch,
        "run",
        str(ROOT / "recipes" / "recipe_a.j2"),
        "--vars",
        str(ROOT / "recipes" / "tiny.toml"),
        "--dry-run",
        *(["--build", build] if build else []),
    ]
    return timed(lambda: subprocess.run(argv, check=True, capture_output=True), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=150_000, help="tokens in the synthetic vocabulary")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--build", default=None, help="build for the dry-run (default: the newest)")
    parser.add_argument("--gguf-reader", action="store_true", help="also time gguf.GGUFReader (slow)")
    parser.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    args = parser.parse_args()
    if args.quick:
        args.vocab, args.repeat = 2000, 1
    tokens = synthetic_vocab(args.vocab)
    with tempfile.TemporaryDirectory(prefix="orch-preflight-") as tmp:
        target = write_model(Path(tmp) / "target.gguf", tokens, 24)
        same = write_model(Path(tmp) / "draft-same.gguf", tokens, 2)
        extra = write_model(Path(tmp) / "draft-extra.gguf", tokens + [f"<|extra_{i}|>" for i in range(64)], 2)
        print(
            f"synthetic target: {args.vocab} tokens, {target.stat().st_size / 2**20:.1f} MiB; "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
        )
        show(
            "metadata read, cold (pages evicted)",
            timed(lambda: read_header(target), args.repeat, before=lambda: evict(target)),
        )
        show("metadata read, warm", timed(lambda: read_header(target), args.repeat))
        show("inspect (metadata + sha256 of the file), warm", timed(lambda: gguf_info.inspect(target), args.repeat))
        infos = {p: gguf_info.inspect(p) for p in (target, same, extra)}
        show(
            "vocabulary comparison, same tokens (hashes equal)",
            timed(lambda: vocab.differences(infos[target], infos[same]), args.repeat),
        )
        show(
            "vocabulary comparison, 64 extra tokens (texts compared)",
            timed(lambda: vocab.differences(infos[target], infos[extra]), args.repeat),
        )
        for draft in (same, extra):
            argv = ["llama-speculative-simple", "-m", str(target), "-md", str(draft)]
            show(
                f"pre-flight check, target + {draft.stem}", timed(lambda argv=argv: preflight.check(argv), args.repeat)
            )
        if args.gguf_reader:
            show("gguf.GGUFReader (before issue 13), warm", timed(lambda: gguf.GGUFReader(target, "r"), 1))
    dry = dry_run_time(args.repeat, args.build)
    if dry:
        show("orch run recipe_a.j2 --vars tiny.toml --dry-run (wall)", dry)
    else:
        print("  (no tiny models in $ORCH_MODELS or no $ORCH_BUILDS_DIR: dry-run not timed)")


if __name__ == "__main__":
    main()
