"""`orch probe --plot`: what a pass costs on this machine, in target steps against the tokens in it, for the target
and its draft, between the two lines that frame it: one step whatever the batch (a GPU whose target is
memory-bound: where a draft pays) and one step a token (compute-bound: where no acceptance can pay)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.report.plots import plt, save  # headless, text never read as TeX


def draw(probed, path: Path, title: str) -> Path:
    """One line per probed model (its passes over its target's step), with each timing's standard deviation."""
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    most = max(b for costs in (*probed.targets.values(), *probed.drafts.values()) for b in costs.passes)
    ax.plot([1, most], [1, most], ls=":", color="grey", label="a step a token (compute-bound)")
    ax.plot([1, most], [1, 1], ls="--", color="grey", label="one step a pass (memory-bound)")
    for role, found in (("target", probed.targets), ("draft", probed.drafts)):
        for key, costs in found.items():
            target = probed.target_of(key) or costs
            sizes = sorted(costs.passes)
            steps = [costs.passes[b].ms / target.step_ms for b in sizes]
            errors = [(costs.passes[b].sd_ms or 0) / target.step_ms for b in sizes]
            ax.errorbar(
                sizes,
                steps,
                yerr=errors,
                marker="o",
                ms=3,
                capsize=2,
                label=f"{role}: {costs.model_name} ({key.n_threads or 'default'} threads, -ngl "
                f"{key.n_gpu_layers if key.n_gpu_layers is not None else 'default'})",
            )
    ax.set_xlabel("tokens in one pass (a verification of b - 1 drafted tokens)")
    ax.set_ylabel("target steps (the target's pass of one token)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return save(fig, path)
