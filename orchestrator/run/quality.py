"""Quality mode: every arm's target model measured with llama-perplexity beside its speed runs.

Perplexity on a text (orch's default evaluation text unless the recipe names one), and with `quality_base` the
KL divergence, Δp and same-top-p against that base model. The base logits are computed once per base model,
text, context and build, before the sweep opens (a text too short for the context stops the command there, exit
36), kept under ~/.cache/orch/kld and reused by every quant. A quality row is keyed by what decides its figures
(model sha256, build, text sha256, context, KV-cache types, base), so a draft arm or a second context over the
same quant reuses the first measurement instead of repeating it; each run points at its row (runs.quality_id).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator import config, proc, store
from orchestrator.build.finished import Build
from orchestrator.errors import QualityInputError
from orchestrator.hashing import sha256_file
from orchestrator.parse.perplexity import parse_perplexity, problem
from orchestrator.recipe.argv import flag_values
from orchestrator.run.one_run import LOST_TAIL_ATTEMPTS
from orchestrator.run.prepare import PreparedArm

DEFAULT_TEXT = Path(__file__).resolve().parent.parent / "data" / "eval" / "declaration.txt"
# The arm's flags llama-perplexity takes as well: where the weights go, threads, and the KV cache it measures.
COPIED = (("-ngl", "--gpu-layers", "--n-gpu-layers"), ("-t", "--threads"), ("-fa", "--flash-attn"))
CACHE_K, CACHE_V = ("-ctk", "--cache-type-k"), ("-ctv", "--cache-type-v")
COLUMNS = (
    "n_chunks",
    "ppl",
    "ppl_err",
    "base_ppl",
    "base_ppl_err",
    "ppl_ratio",
    "ppl_ratio_err",
    "ln_ppl_ratio",
    "ln_ppl_ratio_err",
    "ln_ppl_correlation",
    "kld_mean",
    "kld_mean_err",
    "kld_max",
    "kld_p999",
    "kld_p99",
    "kld_median",
    "kld_p10",
    "kld_p5",
    "kld_p1",
    "kld_min",
    "dp_mean",
    "dp_mean_err",
    "dp_rms",
    "dp_rms_err",
    "same_top_p",
    "same_top_p_err",
)
TIMEOUT_S = 3600


@dataclass(frozen=True)
class Setup:
    """One arm's quality measurement: what it is measured on and against."""

    exe: str
    build: str  # build name: logits differ (a little) from build to build, so each has its own
    text: Path
    text_sha256: str
    ctx: int
    base: Path | None
    base_sha256: str | None

    @property
    def logits(self) -> Path | None:
        if not self.base_sha256:
            return None
        return (
            config.cache_dir() / "kld" / f"{self.base_sha256[:16]}-{self.text_sha256[:12]}-c{self.ctx}-{self.build}.kld"
        )


def setup(p: PreparedArm, build: Build) -> Setup:
    params = p.arm.params
    exe = build.tool("llama-perplexity")
    if exe is None:
        raise QualityInputError(
            f"build {build.name} has no llama-perplexity; run `orch build "
            f"{build.upstream_commit[:9]}` to add it (nothing else is rebuilt)"
        )
    text = Path(params.get("quality_text") or DEFAULT_TEXT).expanduser()
    if not text.is_file():
        raise QualityInputError(
            f"quality_text {text} does not exist; give a UTF-8 text file (or leave it empty "
            f"for orch's default evaluation text)"
        )
    base = params.get("quality_base") or None
    if base:
        base = Path(base).expanduser()
        base = base if base.is_absolute() else Path(params["models"]) / base
        if not base.is_file():
            raise QualityInputError(
                f"quality_base {base} does not exist; name the unquantized (f16) model the "
                f"quants are compared with, or leave it empty for perplexity alone"
            )
    ctx = int(params.get("quality_ctx") or 256)
    return Setup(
        exe=exe,
        build=build.name,
        text=text,
        text_sha256=sha256_file(text),
        ctx=ctx,
        base=base,
        base_sha256=sha256_file(base) if base else None,
    )


TOOLS = ("llama-quantize", "llama-perplexity")  # what quality mode runs besides the recipe's tools


def prepare_bases(db: store.Database, build: Build, prepared: list[PreparedArm]) -> None:
    """Every arm's setup checked and its base logits made (or found) before the sweep exists."""
    done = set()
    for p in prepared:
        if p.stop_reason:
            continue
        s = setup(p, build)
        if s.logits and s.logits not in done:
            _base_logits(db, build, s, _ran_with(p.executed)[2])
            done.add(s.logits)


def _ran_with(argv: list[str]) -> tuple[str, str, list[str]]:
    """What an arm ran with that its quality depends on: its K and V cache types (f16 where it set none) and the
    flags llama-perplexity is given as the arm had them (COPIED)."""
    cache_k, cache_v, *copied = flag_values(argv, [CACHE_K, CACHE_V, *COPIED])
    return (
        cache_k or "f16",
        cache_v or "f16",
        [f for flags, value in zip(COPIED, copied) if value is not None for f in (flags[0], value)],
    )


def _base_logits(db: store.Database, build: Build, arm_setup: Setup, extra: list[str]) -> None:
    """The base model's logits on the text (llama-perplexity --kl-divergence-base), and its perplexity row."""
    if arm_setup.logits.is_file():
        return
    arm_setup.logits.parent.mkdir(parents=True, exist_ok=True)
    tmp = arm_setup.logits.with_name(arm_setup.logits.name + ".partial")
    argv = [
        arm_setup.exe,
        "-m",
        str(arm_setup.base),
        "-f",
        str(arm_setup.text),
        "-c",
        str(arm_setup.ctx),
        "--kl-divergence-base",
        str(tmp),
        *extra,
    ]
    print(
        f"orch: computing base logits of {arm_setup.base.name} on {arm_setup.text.name} (context {arm_setup.ctx}) once: {arm_setup.logits}",
        file=sys.stderr,
    )
    res, parsed, why = _perplexity(argv, kld=False)
    if why or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise QualityInputError(
            f"base logits of {arm_setup.base} on {arm_setup.text} at context {arm_setup.ctx} failed: {why}; "
            f"{'use a longer quality_text or a smaller quality_ctx' if 'tokens' in str(why) else ''}".rstrip("; ")
        )
    key = {
        "model_sha256": arm_setup.base_sha256,
        "build_id": build.id,
        "text_sha256": arm_setup.text_sha256,
        "n_ctx": arm_setup.ctx,
        "cache_type_k": "f16",
        "cache_type_v": "f16",
        "base_sha256": None,
    }
    with db.write() as con:
        if store.find_quality(con, key) is None:
            _insert(con, key, arm_setup, parsed, argv, res)
    os.replace(tmp, arm_setup.logits)  # last: the logits count only once the base's own row is stored


class Measurements:
    """A sweep's quality measurements: each key (QUALITY_KEY) measured once, and every run of a key linked to its
    row. A run whose measurement failed (llama-perplexity's log lost its statistics at exit, as llama.cpp's logger
    can on a busy machine) waits for the next run of its key to measure it, and is linked then: a run never stays
    unlinked while its model's row exists."""

    def __init__(self, db: store.Database, build: Build):
        self.db, self.build = db, build
        self.waiting: dict[tuple, list[int]] = {}  # key -> runs whose measurement of it failed

    def measure(self, p: PreparedArm, run_id: int) -> str:
        """The arm's quality row (measured now, or the one already stored for the same key) linked to run_id and
        to the runs that waited for it; a short text for the progress line."""
        s = setup(p, self.build)
        cache_k, cache_v, copied = _ran_with(p.executed)
        key = {
            "model_sha256": p.models.target.sha256,
            "build_id": self.build.id,
            "text_sha256": s.text_sha256,
            "n_ctx": s.ctx,
            "cache_type_k": cache_k,
            "cache_type_v": cache_v,
            "base_sha256": s.base_sha256,
        }
        waiting = self.waiting.setdefault(tuple(key.values()), [])
        with self.db.write() as con:
            found = store.find_quality(con, key)
        if found is None:
            argv = [
                s.exe,
                "-m",
                p.models.target.path,
                "-c",
                str(s.ctx),
                *copied,
                CACHE_K[0],
                cache_k,
                CACHE_V[0],
                cache_v,
            ]
            argv += ["--kl-divergence-base", str(s.logits), "--kl-divergence"] if s.logits else ["-f", str(s.text)]
            res, parsed, why = _perplexity(argv, kld=bool(s.logits))
            if why:
                waiting.append(run_id)
                return f"quality not measured: {why}"
            with self.db.write() as con:
                found = _insert(con, key, s, parsed, argv, res)
        with self.db.write() as con:
            for linked in [*waiting, run_id]:
                store.link_run(con, linked, found)
            row = store.quality_row(con, found)
        waiting.clear()
        return _described(row)


def _perplexity(argv: list[str], *, kld: bool) -> tuple[proc.ProcResult, dict, str | None]:
    """llama-perplexity run, again (up to LOST_TAIL_ATTEMPTS in all) while it exits 0 without its statistics: the
    result, what it printed, and why it holds no usable result (None when it does)."""
    for _ in range(LOST_TAIL_ATTEMPTS):
        res = proc.run(argv, capture=True, timeout=TIMEOUT_S)
        parsed = parse_perplexity(res.stderr + "\n" + res.stdout)
        why = problem(parsed, kld=kld) if res.ok else res.describe()
        if not (why and res.ok and "tokens_needed" not in parsed):  # a text too short is no lost tail
            break
    return res, parsed, why


def _described(row: dict) -> str:
    text = f"PPL {row['ppl']:.4g}" + (f" ± {row['ppl_err']:.2g}" if row.get("ppl_err") is not None else "")
    if row.get("kld_mean") is not None:  # + 0.0: a KLD of -0 (the base against itself) reads 0
        text += (
            f", KLD {row['kld_mean'] + 0.0:.4g}"
            + (f" ± {row['kld_mean_err']:.2g}" if row.get("kld_mean_err") is not None else "")
            + f", same top p {row['same_top_p']:.1f}%"
        )
    return text


def _insert(con, key: dict, arm_setup: Setup, parsed: dict, argv: list[str], res: proc.ProcResult) -> int:
    row = {
        **key,
        "text_name": arm_setup.text.name,
        **{c: parsed.get(c) for c in COLUMNS},
        "stats": json.dumps(parsed),
        "argv": json.dumps(argv),
        "log": res.stderr + "\n" + res.stdout,
        "wall_s": res.wall_s,
    }
    return store.insert_quality(con, row)
