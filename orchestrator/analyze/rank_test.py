"""The Mann-Whitney U test of two samples (orch compare's p-value): exact by a small dynamic programme where
n_a * n_b is at most EXACT_MW_MAX, else the normal approximation with the tie correction; midranks for both."""

from __future__ import annotations

import math
from collections.abc import Sequence

from orchestrator.analyze.stats import clean

EXACT_MW_MAX = 100  # n_a * n_b up to this: exact Mann-Whitney distribution, beyond: normal approximation


def midranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..N in the input's order; tied values share the mean of their positions."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def mann_whitney_u(a: Sequence[float], b: Sequence[float], method: str = "auto") -> float:
    """Two-sided p-value of the Mann-Whitney U test that a and b come from the same distribution.

    method "exact": the permutation distribution of a's rank sum given the observed (mid)ranks, so ties are
    handled exactly; p = 2 * min(P(W <= w), P(W >= w)), capped at 1. "normal": z with tie-corrected
    variance and a 0.5 continuity correction. "auto": exact when len(a) * len(b) <= EXACT_MW_MAX.
    """
    a, b = clean(a), clean(b)
    if not a or not b:
        raise ValueError("Mann-Whitney U needs at least one sample on each side")
    if method == "auto":
        method = "exact" if len(a) * len(b) <= EXACT_MW_MAX else "normal"
    ranks = midranks(a + b)
    if method == "exact":
        return _exact_p(ranks, len(a))
    if method == "normal":
        return _normal_p(ranks, len(a), len(b))
    raise ValueError(f"method {method!r} is not one of auto, exact, normal")


def _exact_p(ranks: list[float], n_a: int) -> float:
    doubled = [round(2 * r) for r in ranks]  # midranks are multiples of 0.5: integers after doubling
    observed = sum(doubled[:n_a])
    # counts[k][s]: ways to pick k of the ranks seen so far with doubled sum s
    top = sum(doubled)
    counts = [[0] * (top + 1) for _ in range(n_a + 1)]
    counts[0][0] = 1
    for r in doubled:
        for k in range(n_a, 0, -1):
            prev, row = counts[k - 1], counts[k]
            for s in range(top, r - 1, -1):
                if prev[s - r]:
                    row[s] += prev[s - r]
    dist = counts[n_a]
    total = sum(dist)
    low = sum(dist[: observed + 1]) / total
    high = sum(dist[observed:]) / total
    return min(1.0, 2 * min(low, high))


def _normal_p(ranks: list[float], n_a: int, n_b: int) -> float:
    n = n_a + n_b
    u = sum(ranks[:n_a]) - n_a * (n_a + 1) / 2
    ties: dict[float, int] = {}
    for r in ranks:
        ties[r] = ties.get(r, 0) + 1
    tie_term = sum(t**3 - t for t in ties.values()) / (n * (n - 1)) if n > 1 else 0.0
    var = n_a * n_b / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return 1.0  # every value tied: no evidence of a difference
    z = max(0.0, abs(u - n_a * n_b / 2) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))
