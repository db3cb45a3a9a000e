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
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.analyze import stats


@dataclass(frozen=True)
class StepCost:
    sweep: int
    arm: str
    reference: str  # the arm whose ms per token is t
    draft_length: float  # g: drafted tokens per pass
    pass_cost: float  # k: one pass in target tokens (drafting, verifying and the rest)
    draft_cost: float | None  # c: one drafted token in target tokens; None where the logs print no draft time
    break_even: float  # a*: acceptance (accepted / drafted) at which speedup(a) = 1; above 1: none reachable

    @property
    def verify_cost(self) -> float | None:
        """v: a pass without its drafting, in target tokens."""
        return None if self.draft_cost is None else self.pass_cost - self.draft_length * self.draft_cost

    def speedup_at(self, acceptance: float) -> float:
        return (1 + self.draft_length * acceptance) / self.pass_cost

    @property
    def reachable(self) -> bool:
        return self.break_even <= 1


def step_costs(cost_rows: list[dict], summary_rows: list[dict]) -> dict[tuple[int, str], StepCost]:
    """Per (sweep, arm): cost_rows from queries.arm_draft_costs; summary_rows (analyze/summary) give each arm's
    reference (`vs`) and that reference's mean decode tok/s. Arms without a reference speed are left out."""
    speed = {(r["sweep"], r["arm"]): r.get("decode_tps") for r in summary_rows}
    reference = {(r["sweep"], r["arm"]): r.get("vs") for r in summary_rows}
    out = {}
    for c in cost_rows:
        key = (c["sweep_id"], c["arm"])
        ref = reference.get(key)
        ref_tps = speed.get((key[0], ref)) if ref else None
        if not ref_tps or not c["passes"] or not c["drafted"]:
            continue
        t = 1000.0 / ref_tps
        g = c["drafted"] / c["passes"]
        k = c["decode_ms"] / c["passes"] / t
        draft = c["draft_ms"] / c["drafted"] / t if c.get("draft_ms") is not None else None
        out[key] = StepCost(sweep=key[0], arm=key[1], reference=ref, draft_length=g, pass_cost=k, draft_cost=draft,
                            break_even=(k - 1) / g)
    return out


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
        return {"joules_per_token": self.joules_per_token, "joules_per_token_low": self.low,
                "joules_per_token_high": self.high, "energy_runs": self.runs, "power_w": self.power_w,
                "energy_samples_min": self.min_samples, "energy_gpu_idle_runs": self.gpu_idle_runs}


def arm_energy(rows: list[dict]) -> dict[tuple[int, str], Energy]:
    """Per (sweep, arm) from queries.arm_energy rows."""
    out = {}
    for r in rows:
        low, high = stats.log_interval(r["n"], r["mean_log"], r["sd_log"])
        out[(r["sweep_id"], r["arm"])] = Energy(joules_per_token=r["mean"] if r["n"] else None, low=low, high=high,
                                                runs=r["n"], power_w=r["power_w"], min_samples=r["min_samples"],
                                                gpu_idle_runs=r["gpu_idle_runs"])
    return out

