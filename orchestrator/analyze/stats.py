"""Per-arm statistics: every 95% interval orch prints, ratios of means, and the statistics the
warnings (analyze/warnings) read: clusters, outliers, the break-even acceptance.

The one home of the intervals: a mean's t-interval (`mean_interval`, `from_moments`), a positive quantity's interval
on its logs (`log_interval`: speeds, paired speedups, energy), the paired ratio (`paired_ratio`) and the unpaired one
(`ratio_of_means`, Welch). The store's SQL only gathers the moments these take (count, mean, sample stdev, of logs
where they are logs); `orch summary`, `orch compare`, `orch tune` and the report read the ends from here, so one
comparison gets one interval wherever it is printed. The t quantile is scipy's at the exact, possibly fractional,
degrees of freedom. (Mann-Whitney U: analyze/rank_test.py.)
Everything that needs a spread (stdev, intervals) is None below two samples instead of inventing one.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t at df degrees of freedom, exact at any df > 0 (Welch's are fractional):
    scipy.stats.t.ppf(0.975, df)."""
    if not df > 0:
        raise ValueError(f"t quantile needs df > 0, got {df}")
    return _t975(float(df))


@lru_cache(maxsize=4096)  # a summary asks for the same few whole df thousands of times
def _t975(df: float) -> float:
    return float(_stdtrit()(df, 0.975))


def _stdtrit():
    # scipy.special.stdtrit is the function scipy.stats.t.ppf evaluates (equal bit for bit, tests/unit/test_stats);
    # imported here, not scipy.stats: 0.35 s of start-up instead of 0.9, paid only by a command that prints one.
    from scipy.special import stdtrit

    return stdtrit


def import_quantiles_meanwhile() -> None:
    """Start importing scipy's t quantile (0.35 s) on another thread: a command that will print intervals calls
    this before its queries, which it runs meanwhile (DuckDB lets Python run while it queries); the first t975
    then waits only for what is left of the import. Not a daemon: an early exit waits for the import's end."""
    threading.Thread(target=_stdtrit, name="import-scipy").start()


Z975 = 1.959963984540054  # scipy.stats.norm.ppf(0.975): a standard error to a 95% interval


def error_interval(value: float, standard_error: float | None) -> tuple[float, float]:
    """The 95% normal interval value -/+ z * standard error, for a figure that comes with its own standard error
    from thousands of tokens (llama-perplexity's); the value alone where none is known."""
    half = Z975 * (standard_error or 0.0)
    return value - half, value + half


def mean_interval(n: int, mean: float | None, sd: float | None) -> tuple[float | None, float | None]:
    """The 95% t-interval (low, high) of a mean from its sample's count, mean and sample stdev (n - 1): mean -/+
    t975(n - 1) * sd / sqrt(n); (None, None) below two values or without a stdev."""
    if n is None or n < 2 or sd is None or mean is None:
        return None, None
    half = t975(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def log_interval(n: int, mean_log: float | None, sd_log: float | None) -> tuple[float | None, float | None]:
    """The 95% interval (low, high) of a positive quantity from the moments of its n logs: exp of the t-interval of
    the mean log, asymmetric and never below zero (a t-interval on raw speeds with a CV of 30% and three runs
    reaches below zero). (None, None) below two values. A paired speedup's is this over its log ratios."""
    low, high = mean_interval(n, mean_log, sd_log)
    return (None, None) if low is None else (math.exp(low), math.exp(high))


@dataclass(frozen=True)
class Stats:
    n: int
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    stdev: float | None = None  # sample standard deviation (n - 1)
    cv: float | None = None  # stdev / mean
    ci_low: float | None = None  # 95% t-interval for the mean; None below 2 samples
    ci_high: float | None = None


def describe(samples: Sequence[float]) -> Stats:
    xs = clean(samples)
    if not xs:
        return Stats(n=0)
    return from_moments(
        len(xs),
        statistics.fmean(xs),
        sample_stdev(xs) if len(xs) > 1 else None,
        median=statistics.median(xs),
        low=min(xs),
        high=max(xs),
    )


def from_moments(
    n: int,
    mean: float | None,
    sd: float | None,
    *,
    median: float | None = None,
    low: float | None = None,
    high: float | None = None,
) -> Stats:
    """Stats from a sample's count, mean and sample stdev (what SQL aggregates give); the interval is defined here."""
    if not n:
        return Stats(n=0)
    if n < 2 or sd is None:
        return Stats(n=n, mean=mean, median=median, min=low, max=high)
    ci_low, ci_high = mean_interval(n, mean, sd)
    return Stats(
        n=n,
        mean=mean,
        median=median,
        min=low,
        max=high,
        stdev=sd,
        cv=sd / mean if mean else None,
        ci_low=ci_low,
        ci_high=ci_high,
    )


@dataclass(frozen=True)
class Speedup:
    ratio: float  # head / base
    ci_low: float | None  # 95%; None when the data cannot give a spread
    ci_high: float | None
    n: int  # pairs (paired) or the smaller side's sample count (unpaired)
    paired: bool = True


def ratio_of_means(base: Sequence[float], head: Sequence[float]) -> Speedup | None:
    """mean(head) / mean(base) for unpaired samples (two builds), 95% interval by the delta method on logs.

    var(log ratio) ~ cv_head^2 / n_head + cv_base^2 / n_base; Welch-Satterthwaite df for the t quantile.
    The interval is None when either side has fewer than 2 samples.
    """
    b, h = describe(base), describe(head)
    if not b.n or not h.n or not _positive(b.mean) or not _positive(h.mean):
        return None
    ratio = h.mean / b.mean
    if b.n < 2 or h.n < 2:
        return Speedup(ratio, None, None, min(b.n, h.n), paired=False)
    vb, vh = (b.stdev / b.mean) ** 2 / b.n, (h.stdev / h.mean) ** 2 / h.n
    se = math.sqrt(vb + vh)
    if se == 0:
        return Speedup(ratio, ratio, ratio, min(b.n, h.n), paired=False)
    df = (vb + vh) ** 2 / (vb**2 / (b.n - 1) + vh**2 / (h.n - 1))
    half = t975(df) * se
    return Speedup(ratio, ratio * math.exp(-half), ratio * math.exp(half), min(b.n, h.n), paired=False)


def paired_ratio(pairs: Sequence[tuple[float, float]]) -> Speedup | None:
    """head / base over paired samples (base, head): exp of the mean log ratio, 95% t-interval of the mean log
    (a paired t-test at 5% where it excludes 1). None without a positive pair; no interval below two."""
    logs = [math.log(h / b) for b, h in pairs if _positive(b) and _positive(h)]
    if not logs:
        return None
    n, mean = len(logs), statistics.fmean(logs)
    return Speedup(math.exp(mean), *log_interval(n, mean, sample_stdev(logs) if n > 1 else None), n)


def _positive(x) -> bool:
    return x is not None and not math.isnan(x) and x > 0


OUTLIER_MIN_N = 5
MODIFIED_Z_LIMIT = 3.5
BIMODAL_MIN_N = 4
BIMODAL_MIN_GAP = 0.10  # of the median
BIMODAL_GAP_SDS = 4.0  # gap / larger within-cluster stdev


def sample_stdev(xs: Sequence[float]) -> float:
    """Sample standard deviation (n - 1), two-pass in floats.

    statistics.stdev is exact (Fractions) and about 100 times slower; a summary of 100k stored runs calls
    this some 200k times. The two-pass float form agrees with it to ~1e-12 relative on benchmark speeds.
    """
    n = len(xs)
    if n < 2:
        raise ValueError("a sample standard deviation needs at least two values")
    mean = math.fsum(xs) / n
    return math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))


def clean(samples) -> list[float]:
    """The samples as floats, None and NaN left out (a run that printed no speed is not a zero)."""
    return [float(x) for x in samples if x is not None and not math.isnan(x)]


def bimodal_split(values: Sequence[float]) -> tuple[list[float], list[float]] | None:
    """(low cluster, high cluster) when the values split in two: each of >= 2 values, the gap between them
    >= BIMODAL_MIN_GAP of the median and >= BIMODAL_GAP_SDS times the larger within-cluster stdev; else None."""
    return _split(sorted(clean(values)))


def _split(xs: list[float]) -> tuple[list[float], list[float]] | None:
    """bimodal_split of clean, sorted values."""
    if len(xs) < BIMODAL_MIN_N:
        return None
    median = statistics.median(xs)
    best = None
    for i in range(2, len(xs) - 1):  # low = xs[:i], high = xs[i:], both at least 2 values
        gap = xs[i] - xs[i - 1]
        if gap <= 0 or gap < BIMODAL_MIN_GAP * abs(median):
            continue  # decided without the spreads: most splits of an ordinary sample end here
        within = max(sample_stdev(xs[:i]), sample_stdev(xs[i:]))
        if gap >= BIMODAL_GAP_SDS * within and (best is None or gap > best[0]):
            best = (gap, xs[:i], xs[i:])
    return (best[1], best[2]) if best else None


def mad_outliers(values: Sequence[float]) -> list[float]:
    """The values whose modified z-score 0.6745 * (x - median) / MAD exceeds 3.5 (Iglewicz and Hoaglin; the mean
    absolute deviation scaled by 1.2533 where MAD is 0), in input order; none below OUTLIER_MIN_N values."""
    return _outliers(clean(values))


def _outliers(xs: list[float]) -> list[float]:
    """mad_outliers of clean values."""
    if len(xs) < OUTLIER_MIN_N:
        return []
    median = statistics.median(xs)
    mad = statistics.median(abs(x - median) for x in xs)
    if mad > 0:
        scale = mad / 0.6745
    else:
        scale = 1.253314 * statistics.fmean(abs(x - median) for x in xs)
    if scale == 0:
        return []
    return [x for x in xs if abs(x - median) / scale > MODIFIED_Z_LIMIT]


def break_even(points: Sequence[tuple[float, float]]) -> float | None:
    """The acceptance at which speedup crosses 1, from a sweep's (acceptance, speedup) per non-baseline arm.

    Take the losing arm (speedup < 1) with the highest acceptance and the winning arm (speedup > 1) with the
    lowest; when every loser sits below every winner, interpolate linearly between those two. None when the
    sweep has no loser or no winner, or when they overlap (acceptance alone does not decide there: mixing
    draft methods of different cost does that, so pass one method's arms at a time).
    """
    pts = [(a, s) for a, s in points if a is not None and s is not None and not math.isnan(a) and not math.isnan(s)]
    losers = [p for p in pts if p[1] < 1]
    winners = [p for p in pts if p[1] > 1]
    if not losers or not winners:
        return None
    a_lo, s_lo = max(losers)
    a_hi, s_hi = min(winners)
    if a_lo >= a_hi:
        return None
    return a_lo + (1 - s_lo) * (a_hi - a_lo) / (s_hi - s_lo)


__all__ = [
    "Stats",
    "Speedup",
    "describe",
    "from_moments",
    "error_interval",
    "mean_interval",
    "log_interval",
    "paired_ratio",
    "ratio_of_means",
    "t975",
    "clean",
    "sample_stdev",
    "bimodal_split",
    "mad_outliers",
    "break_even",
]
