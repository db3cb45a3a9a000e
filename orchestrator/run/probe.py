"""`orch probe`: what this machine charges each model a recipe drafts with, timed with llama-bench and kept.

For every arm with a draft model, its target's and its draft's pass of b tokens for b = 1 .. the largest window of
the arms on that model + 1 (`-p 1,2,..,W+1 -n 0`): the target verifies W drafted tokens in a pass of W + 1, and
llama-speculative-simple feeds the draft model that same batch before it drafts again, one token a step (a pass of
one). At least to the acceptance probe's window + 1: its own passes are priced to calibrate. At the arm's threads and
offload and at the depth its decoding reaches on average (the prompt's tokens and half of -n; 0 on builds whose
llama-bench has no -d). llama.cpp decodes a batch of more than one token at the batch thread count (-tb; a draft's
-tbd, which defaults to the target's -tb, not to -td): where that differs, a model's step is timed at its threads
and its batches at theirs (two needs, joined by Probed.costs). Stored in results.duckdb (cost_probes,
store/probes.py) and reused until the build, host, model, threads, offload or depth change; `again` probes anew.
analyze/machine_costs reads the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator import proc, store
from orchestrator.analyze.machine_costs import PassCosts, ProbeKey, Timing, pass_costs
from orchestrator.build.finished import Build
from orchestrator.errors import CostProbeFailed, ParseError
from orchestrator.machine import identity
from orchestrator.models import tokens
from orchestrator.parse.bench import parse_bench
from orchestrator.recipe import argv as flags
from orchestrator.run.prepare import PreparedArm
from orchestrator.store import probes

DEFAULT_WINDOW = 16  # llama.cpp's default draft window where an arm sets none
# The acceptance probe's window (run/acceptance_probe): its own passes are priced to calibrate, so every model is
# probed at least to it, whatever the arms' windows
ACCEPTANCE_WINDOW = 16
TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Need:
    """One model to probe at one thread count: its passes of 1..W+1 tokens, or of one (its step, where its batches
    run at other threads: _model_needs)."""

    role: str  # "target" or "draft": how the table names it
    path: str
    name: str
    key: ProbeKey
    batches: tuple[int, ...]


@dataclass(frozen=True)
class Probed:
    """What a recipe's drafting arms cost on this machine: each target's and each draft's passes, by key."""

    targets: dict[ProbeKey, PassCosts]
    drafts: dict[ProbeKey, PassCosts]
    seconds: float  # spent probing now (0 when every figure was stored)

    def costs(self, needs: tuple[Need, ...]) -> PassCosts | None:
        """A model's passes from its needs (needs_by_arm): its step, and its batches where timed at other threads."""
        found = self.targets if needs[0].role == "target" else self.drafts
        step, *batched = (found.get(n.key) for n in needs)
        if step is None or None in batched:
            return None
        return (
            step
            if not batched
            else PassCosts(
                step.key, step.model_name, {**batched[0].passes, 1: step.passes[1]}, step.reused and batched[0].reused
            )
        )

    def target_of(self, key: ProbeKey) -> PassCosts | None:
        """The target probed on the same build, host and depth: what a model's passes are counted in steps of."""
        return next(
            (
                t
                for k, t in self.targets.items()
                if (k.build_id, k.host_id, k.n_depth) == (key.build_id, key.host_id, key.n_depth)
            ),
            None,
        )


def needs_by_arm(
    arms: list[PreparedArm], build: Build, host_id: str | None = None
) -> dict[str, tuple[tuple[Need, ...], tuple[Need, ...]]]:
    """Each arm that runs with a draft model or an n-gram method (skipped arms aside): its target's needs and its
    draft's (none for a lookup), up to its window (at least the acceptance probe's) + 1, on this host (or host_id's,
    stored); a model's needs are one, or two where its batches run at other threads than its step (_model_needs).
    Its depth is counted once here (llama-tokenize on its prompt)."""
    host = host_id or identity.this_host().id
    deep = "--n-depth" in build.help_texts().get("llama-bench", "")  # older llama-bench times at depth 0 only
    out = {}
    for p in arms:
        if p.stop_reason or not p.models or not p.models.target or not (p.models.draft or looks_up(p.executed)):
            continue
        argv = p.executed
        window, threads, threads_batch, threads_draft, threads_batch_draft, ngl, ngld = map(
            _int,
            flags.flag_values(
                argv,
                [
                    flags.DRAFT_MAX,
                    flags.THREADS,
                    flags.THREADS_BATCH,
                    flags.THREADS_DRAFT,
                    flags.THREADS_BATCH_DRAFT,
                    flags.GPU_LAYERS,
                    flags.GPU_LAYERS_DRAFT,
                ],
            ),
        )
        depth = decode_depth(argv, build) if deep else 0
        target, draft = p.models.target, p.models.draft
        batches = tuple(range(1, max(window or DEFAULT_WINDOW, ACCEPTANCE_WINDOW) + 2))
        # llama.cpp's defaults (common/arg.cpp, both eras): -tb is -t; -td is -t; -tbd is -tb
        target_batch = threads_batch or threads
        out[p.arm.name] = (
            _model_needs("target", target, (threads, target_batch), ngl, batches, (build.id, host, depth)),
            _model_needs(
                "draft",
                draft,
                (threads_draft or threads, threads_batch_draft or target_batch),
                ngld,
                batches,
                (build.id, host, depth),
            )
            if draft
            else (),
        )  # an n-gram method: the target alone
    return out


def _model_needs(
    role: str,
    model,
    threads: tuple[int | None, int | None],
    offload: int | None,
    batches: tuple[int, ...],
    where: tuple[str, str, int],
) -> tuple[Need, ...]:
    """A model's passes at its (step, batch) threads: one need, or its step and its batches apart where they differ."""
    build_id, host, depth = where
    step, batch = threads

    def need(n_threads: int | None, sizes: tuple[int, ...]) -> Need:
        return Need(
            role, model.path, _name(model), ProbeKey(build_id, host, model.sha256, n_threads, offload, depth), sizes
        )

    return (need(step, batches),) if batch == step else (need(step, (1,)), need(batch, batches))


def looks_up(argv: list[str]) -> bool:
    """Whether an arm drafts by an n-gram method (a lookup in the text so far, no draft model: run/lookup_probe)."""
    return (flags.flag_value(argv, flags.SPEC_TYPE) or "").startswith("ngram")


def merged(by_arm: dict[str, tuple[tuple[Need, ...], tuple[Need, ...]]]) -> list[Need]:
    """The needs of several arms, each model (key) once with the most batches any arm asks of it, targets first."""
    found: dict[ProbeKey, Need] = {}
    for need in (n for pair in by_arm.values() for needs in pair for n in needs):
        if need.key not in found or len(need.batches) > len(found[need.key].batches):
            found[need.key] = need
    return sorted(found.values(), key=lambda n: n.role != "target")


DEPTH_STEP = 64  # depths are probed in steps of this many tokens: a few tokens more or less change nothing


def decode_depth(argv: list[str], build: Build) -> int:
    """The context depth an arm's decoding reaches on average, its prompt's tokens (llama-tokenize on its target;
    0 where they cannot be counted) and half of the tokens it generates, rounded up to DEPTH_STEP: workloads of
    about the same length share one probe."""
    prompt, prompt_file, model, n_predict = flags.flag_values(
        argv, [flags.PROMPT, flags.PROMPT_FILE, flags.TARGET_MODEL, flags.N_PREDICT]
    )
    text = prompt
    if text is None and prompt_file:
        try:
            text = Path(prompt_file).read_text(errors="replace")
        except OSError:
            text = None
    tool = build.tool(tokens.TOOL)
    ids = tokens.token_ids(Path(tool), Path(model), text) if text and tool and model else None
    depth = len(ids or []) + max(_int(n_predict) or 0, 0) // 2
    return -(-depth // DEPTH_STEP) * DEPTH_STEP


def probe(
    db: store.Database,
    build: Build,
    wanted: list[Need],
    *,
    reps: int = 3,
    again: bool = False,
    stored_only: bool = False,
    any_build: bool = False,
) -> Probed:
    """Each need's stored figures where current (every batch it needs stored for its key; any_build: timed by any
    build, as another host's are), else llama-bench run now and its figures stored (stored_only: left out instead);
    CostProbeFailed where llama-bench fails or times nothing."""
    found: dict[str, dict[ProbeKey, PassCosts]] = {"target": {}, "draft": {}}
    seconds = 0.0
    for need in wanted:
        with db.read() if stored_only else db.write() as con:  # a write: the first probe makes the file
            stored = [] if again else probes.probe_rows(con, need.key.__dict__, "pass", any_build=any_build)
        reused = bool(stored) and set(need.batches) <= {r["batch"] for r in stored}
        if not reused and stored_only:
            continue
        if not reused:
            rows, spent = bench_rows(build, need, reps)
            seconds += spent
            with db.write() as con:
                probes.insert_probe_rows(con, rows)
                stored = probes.probe_rows(con, need.key.__dict__, "pass")
        costs = pass_costs(stored, need.key, reused=reused)
        if costs is None:
            raise CostProbeFailed(f"llama-bench on {need.name} timed no pass of one token")
        found[need.role][need.key] = costs
    return Probed(found["target"], found["draft"], seconds)


def bench_argv(exe: str, need: Need, reps: int) -> list[str]:
    """The llama-bench command that times a need's passes (-p b1,b2,.. -n 0)."""
    k = need.key
    return [
        exe,
        "-m",
        need.path,
        "-p",
        ",".join(map(str, need.batches)),
        "-n",
        "0",
        *(["-d", str(k.n_depth)] if k.n_depth else []),
        "-r",
        str(reps),
        "-o",
        "jsonl",
        *(["-t", str(k.n_threads)] if k.n_threads is not None else []),
        *(["-ngl", str(k.n_gpu_layers)] if k.n_gpu_layers is not None else []),
    ]


def bench_rows(build: Build, need: Need, reps: int) -> tuple[list[dict], float]:
    """llama-bench on the need's model now: its rows as cost_probes stores them, and the seconds it took."""
    exe = build.tool("llama-bench")
    if exe is None:
        raise CostProbeFailed(
            f"build {build.name} has no llama-bench; run `orch build {build.upstream_commit[:9]}` "
            f"to add it (nothing else is rebuilt)"
        )
    argv = bench_argv(exe, need, reps)
    res = proc.run(argv, capture=True, timeout=TIMEOUT_S)
    said = (res.stderr.strip().splitlines() or [""])[-1][:300]
    if not res.ok:
        raise CostProbeFailed(
            f"llama-bench on {need.name} ({need.path}) failed ({res.describe()}): {said or 'no output'}"
        )
    try:
        tests = parse_bench(res.stdout)
    except ParseError as exc:
        raise CostProbeFailed(f"llama-bench on {need.name} printed no timing: {exc}") from None
    rows = [row for t in tests if (row := _row(t, need, argv))]
    if not rows:
        raise CostProbeFailed(f"llama-bench on {need.name} printed no timing ({said or 'no output'})")
    return rows, res.wall_s


def _row(test: dict, need: Need, argv: list[str]) -> dict | None:
    """A stored timing of one llama-bench test: a pass of n_prompt tokens, or one of n_gen tokens decoded."""
    n_prompt, n_gen, samples = test.get("n_prompt") or 0, test.get("n_gen") or 0, test.get("samples_ns") or []
    if not samples or not (n_prompt or n_gen) or any(not isinstance(s, (int, float)) or s <= 0 for s in samples):
        return None
    per = 1 if n_prompt else n_gen  # a pass is timed whole; a decode per token
    timing = Timing(n_prompt or 1, tuple(s / 1e6 / per for s in samples))
    return {
        **need.key.__dict__,
        "host_name": identity.this_host().name,
        "model_name": need.name,
        "kind": "pass" if n_prompt else "token",
        "batch": timing.batch,
        "ms": timing.ms,
        "ms_sd": timing.sd_ms,
        "samples_ms": list(timing.samples_ms),
        "argv": argv,
    }


def _name(model) -> str:
    return model.name or Path(model.path).name


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
