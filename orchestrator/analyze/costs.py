"""What a generated token costs: the break-even acceptance of a speculative arm from its measured step cost, and
GPU energy per token per arm. Pure functions over store/queries rows (arm_draft_costs, arm_energy).

Break-even. A speculative run is a sequence of passes: draft some tokens, verify them in one target batch, keep
the accepted ones plus one. Over an arm's ok runs (pooled): passes = generated - accepted, the mean draft length
g = drafted / passes, and the cost of a pass in target tokens k = (generation ms / passes) / t, where t is the
reference arm's ms per token (its control, else the baseline: the arm's speedup is against it too). With the
acceptance a = accepted / drafted, a pass yields 1 + g * a tokens, so

    speedup(a) = (1 + g * a) / k        and it breaks even at        a* = (k - 1) / g.

k splits into drafting, g * c (c: draft ms per drafted token / t, where the log prints draft time), and the rest,
v (verifying g + 1 tokens, sampling, bookkeeping). Where verifying a batch costs one target step (v = 1, a GPU
with a memory-bound target), a* = c: the textbook (1 - x^(g+1)) / ((1 - x)(g c + 1)) in the per-token
acceptance x of fixed-length drafts says the same, as 1 + g * a = (1 - x^(g+1)) / (1 - x). orch measures v
instead of assuming it: on a CPU a batch of 17 tokens costs several steps, and a* = c would promise a break-even
that the arm cannot reach. g, c and v are held at their measured values: a prompt that drafts longer or shorter
changes them.

Predicted speedup (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding"). With a
per-token acceptance probability x and a draft window of gamma tokens, a pass yields on average
E = (1 - x^(gamma+1)) / (1 - x) tokens and costs gamma c + 1 target steps, so the speedup is E / (gamma c + 1).
orch feeds it what the arm measured: gamma = g (the mean drafted per pass: drafts stop early at p_min or at the
end, so the configured window would overstate it), c as above, and x solved from the measured tokens per pass,
E = 1 + g a (that is llama.cpp's "mean acc len"). x is not the acceptance share a: with tokens accepted one by
one, a = (x + x^2 + ... + x^gamma) / gamma, below x, and putting a for x would undercount E. So the model
reproduces the measured tokens per pass exactly, and predicted / measured = k / (g c + 1) = (g c + v) / (g c + 1):
the two differ only by what verification and bookkeeping cost beyond one target step. A measured loss beside
a predicted gain therefore comes from verifying (v > 1: a CPU, or a compute-bound batch); a predicted loss comes
from acceptance too low for the draft's cost. No prediction where the logs give no draft time (server mode).

Verification as this build and machine pay it. Where the sweep has other drafting arms on the same target, the
prediction does not assume v = 1: each arm's measured (batch b = g + 1, v) says what a verification pass costs on
this build and machine, and the line v(b) = 1 + s (b - 1) through (1, 1) fitted to the OTHER arms (least squares,
leave-one-arm-out: an arm never predicts itself) gives this arm's v(g + 1), so predicted = E / (g c + v(g + 1)).
On Gemma 3 270M on 2 CPU cores a 9-token pass cost 4-5 target steps (each verified position pays the 262k-row
output head), where v = 1 said 9.0x against 1.65x measured. Without another arm the model falls back to v = 1.
Either way a prediction is shown only where the measurement bears it out (checked_model: within 25% or
inside the measured interval); the summary's JSON keeps the model's figure apart as modelled_speedup_unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from orchestrator.analyze import stats

# A prediction is shown only where the measurement bears it out: within this share of the measured speedup, or
# inside its 95% interval. On Gemma 3 270M on 2 CPU cores, n-gram arms verifying 9 tokens a pass paid 4-5 target
# steps for it: the model (verification at one step) said 9.0x where 1.65x was measured, so it is withheld there.
MODEL_TOLERANCE = 0.25


@dataclass(frozen=True)
class StepCost:
    sweep: int
    arm: str
    reference: str  # the arm whose ms per token is t
    draft_length: float  # g: drafted tokens per pass
    pass_cost: float  # k: one pass in target tokens (drafting, verifying and the rest)
    draft_cost: float | None  # c: one drafted token in target tokens; None where the logs print no draft time
    break_even: float  # a*: acceptance (accepted / drafted) at which speedup(a) = 1; above 1: none reachable
    acceptance: float | None = None  # a: accepted / drafted, pooled over the ok runs
    verify_slope: float | None = None  # s of v(b) = 1 + s (b - 1), fitted to the sweep's other arms; None: v = 1

    @property
    def tokens_per_pass(self) -> float | None:
        """E: tokens one pass yields, the accepted ones plus the target's own."""
        return None if self.acceptance is None else 1 + self.draft_length * self.acceptance

    @property
    def token_acceptance(self) -> float | None:
        """x: the per-token acceptance probability that yields E with windows of g tokens."""
        e = self.tokens_per_pass
        return None if e is None else per_token_acceptance(e, self.draft_length)

    @property
    def modelled_speedup(self) -> float | None:
        """Leviathan et al.'s expected_tokens(x, g) / (g c + v) at x = token_acceptance, which is E / (g c + v) by
        x's definition (so no solve here: the summary asks this of every drafting arm), with v the verification
        cost the other arms measured at this arm's batch (verify_slope), else 1; None without a draft time or
        acceptance."""
        e = self.tokens_per_pass
        if e is None or self.draft_cost is None:
            return None
        return e / (self.draft_length * self.draft_cost + self.modelled_verify_cost)

    @property
    def modelled_verify_cost(self) -> float:
        """v(g + 1) from the other arms' fit, in target steps (1: one step, where no other arm measured it)."""
        return 1.0 if self.verify_slope is None else max(1.0, 1 + self.verify_slope * self.draft_length)

    def checked_model(
        self, measured: float | None, low: float | None = None, high: float | None = None
    ) -> float | None:
        """modelled_speedup where the measurement bears it out (within MODEL_TOLERANCE of `measured`, or
        inside its interval [low, high]); None where it does not, or where nothing was measured to check it by."""
        predicted = self.modelled_speedup
        if predicted is None or not measured:
            return None
        inside = low is not None and high is not None and low <= predicted <= high
        return predicted if inside or abs(predicted / measured - 1) <= MODEL_TOLERANCE else None

    @property
    def verify_cost(self) -> float | None:
        """v: a pass without its drafting, in target tokens."""
        return None if self.draft_cost is None else self.pass_cost - self.draft_length * self.draft_cost

    def speedup_at(self, acceptance: float) -> float:
        return (1 + self.draft_length * acceptance) / self.pass_cost

    @property
    def reachable(self) -> bool:
        return self.break_even <= 1


def withheld(cost: StepCost | None, row: dict) -> str | None:
    """Why a drafting arm shows no predicted speedup (None where it shows one): the summary's JSON says it."""
    if row.get("modelled_speedup") is not None:
        return None
    if cost is None:
        return "no step cost: no ok run drafted, or its reference has no speed"
    predicted = cost.modelled_speedup
    if predicted is None:
        return "its logs print no draft time (server mode, or an era without the statistics line)"
    measured = row.get("speedup")
    if not measured:
        return f"nothing measured to check the model's {predicted:.2f}x by"
    verify = (
        "verification priced at one target step (no other drafting arm of this target in the sweep to measure it)"
        if cost.verify_slope is None
        else f"verification priced at {cost.modelled_verify_cost:.2f} target steps from the sweep's other arms"
    )
    return (
        f"the model's {predicted:.2f}x is not within {MODEL_TOLERANCE:.0%} of the measured "
        f"{measured:.2f}x nor inside its interval; {verify}"
    )


def step_costs(cost_rows: list[dict], summary_rows: list[dict]) -> dict[tuple[int, str], StepCost]:
    """Per (sweep, arm): cost_rows from queries.arm_draft_costs; summary_rows (analyze/summaries/compute) give each arm's
    reference (`vs`) and that reference's mean decode tok/s. Arms without a reference speed are left out. Each
    arm's verify_slope is fitted to the other arms of its sweep with the same target (leave_one_out_slopes)."""
    found = _step_costs(cost_rows, summary_rows)
    targets = {(r["sweep"], r["arm"]): r.get("target_sha256") for r in summary_rows}
    slopes = leave_one_out_slopes({key: (targets.get(key), c) for key, c in found.items()})
    return {key: replace(c, verify_slope=slopes.get(key)) for key, c in found.items()}


def leave_one_out_slopes(costs: dict[tuple[int, str], tuple[str | None, StepCost]]) -> dict[tuple[int, str], float]:
    """Per arm, s of v(b) = 1 + s (b - 1) by least squares through (1, 1) over the OTHER arms of its sweep that
    decode the same target and have a measured v (b - 1 = g); arms with no such other arm are left out."""
    points: dict[tuple[int, str | None], list[tuple[tuple[int, str], float, float]]] = {}
    for key, (target, c) in costs.items():
        if c.verify_cost is not None and c.draft_length > 0:
            points.setdefault((key[0], target), []).append((key, c.draft_length, c.verify_cost - 1))
    out = {}
    for group in points.values():
        for key, _, _ in group:
            others = [(x, y) for k, x, y in group if k != key]
            if others:
                out[key] = sum(x * y for x, y in others) / sum(x * x for x, _ in others)
    return out


def with_reference(cost_rows: list[dict], summary_rows: list[dict]):
    """(key, cost row, reference arm, its mean decode tok/s) for each queries.arm_draft_costs row whose arm has a
    reference with a speed and whose runs made a pass that drafted; the others are left out."""
    by_arm = {(r["sweep"], r["arm"]): r for r in summary_rows}
    for c in cost_rows:
        key = (c["sweep_id"], c["arm"])
        ref = by_arm[key].get("vs") if key in by_arm else None
        ref_tps = by_arm[(key[0], ref)].get("decode_tps") if ref and (key[0], ref) in by_arm else None
        if ref_tps and c["passes"] and c["drafted"]:
            yield key, c, ref, ref_tps


def _step_costs(cost_rows: list[dict], summary_rows: list[dict]) -> dict[tuple[int, str], StepCost]:
    out = {}
    for key, c, ref, ref_tps in with_reference(cost_rows, summary_rows):
        t = 1000.0 / ref_tps
        g = c["drafted"] / c["passes"]
        k = c["decode_ms"] / c["passes"] / t
        draft = c["draft_ms"] / c["drafted"] / t if c.get("draft_ms") is not None else None
        accepted = c.get("accepted")
        out[key] = StepCost(
            sweep=key[0],
            arm=key[1],
            reference=ref,
            draft_length=g,
            pass_cost=k,
            draft_cost=draft,
            break_even=(k - 1) / g,
            acceptance=None if accepted is None else accepted / c["drafted"],
        )
    return out


def expected_tokens(x: float, gamma: float) -> float:
    """Tokens a pass yields when each of gamma drafted tokens is accepted with probability x until the first
    rejection, plus the target's own: (1 - x^(gamma+1)) / (1 - x), gamma + 1 at x = 1."""
    if x >= 1:
        return gamma + 1
    return (1 - x ** (gamma + 1)) / (1 - x)


def leviathan_speedup(x: float, gamma: float, c: float) -> float:
    """Leviathan et al.'s expected speedup: expected_tokens(x, gamma) / (gamma c + 1)."""
    return expected_tokens(x, gamma) / (gamma * c + 1)


def per_token_acceptance(tokens_per_pass: float, gamma: float) -> float:
    """The x in [0, 1] with expected_tokens(x, gamma) = tokens_per_pass (it rises with x): 0 at one token a pass
    or fewer, 1 at gamma + 1 or more; bisection to 1e-12."""
    if tokens_per_pass <= 1 or gamma <= 0:
        return 0.0
    if tokens_per_pass >= gamma + 1:
        return 1.0
    low, high = 0.0, 1.0
    while high - low > 1e-12:
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens(mid, gamma) < tokens_per_pass else (low, mid)
    return (low + high) / 2


@dataclass(frozen=True)
class Energy:
    joules_per_token: float | None  # mean over the arm's runs that have a figure
    low: float | None  # 95% interval (of the geometric mean, on logs: never below zero); None below 2 runs
    high: float | None
    runs: int  # runs with a figure
    power_w: float | None  # mean GPU power over the generation windows
    min_samples: int | None  # fewest power samples in one measured run's window: 1 or 2 make a rough figure
    gpu_idle_runs: int = 0  # runs whose GPUs idled through generation (a CPU build): no figure, rightly

    def fields(self) -> dict:
        """The summary row's fields (JSON keys): joules_per_token, joules_per_token_low/_high, energy_runs, power_w,
        energy_samples_min, energy_gpu_idle_runs."""
        return {
            "joules_per_token": self.joules_per_token,
            "joules_per_token_low": self.low,
            "joules_per_token_high": self.high,
            "energy_runs": self.runs,
            "power_w": self.power_w,
            "energy_samples_min": self.min_samples,
            "energy_gpu_idle_runs": self.gpu_idle_runs,
        }


def arm_energy(rows: list[dict]) -> dict[tuple[int, str], Energy]:
    """Per (sweep, arm) from queries.arm_energy rows, the interval on the moments of the logs (stats.log_interval)."""
    out = {}
    for r in rows:
        low, high = stats.log_interval(r["n"], r["mean_log"], r["sd_log"])
        out[(r["sweep_id"], r["arm"])] = Energy(
            joules_per_token=r["mean"] if r["n"] else None,
            low=low,
            high=high,
            runs=r["n"],
            power_w=r["power_w"],
            min_samples=r["min_samples"],
            gpu_idle_runs=r["gpu_idle_runs"],
        )
    return out
