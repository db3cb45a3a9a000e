"""The order of a sweep's runs: arms x repeats, with warm-ups, and what is left after a partial sweep.

Orders (`--order`):
- interleaved (default): repeat 0 runs every arm once in recipe order, then repeat 1, ...; drift over the
  sweep (clocks, temperature, a neighbour's job) then hits every arm alike, and pairing by repeat cancels it.
- sequential: every repeat of arm 1, then of arm 2, ...; each arm runs under the most uniform conditions,
  at the price of confounding arms with drift.
- latin: like interleaved, but repeat r starts at arm r mod k (a cyclic Latin square), so over k repeats
  every arm takes every position in the round once and no arm always runs first after an idle gap.

Warm-ups (`--warmup K`): K unmeasured runs per arm before its measurements. In interleaved and latin order
they form K rounds before repeat 0, in the same order as a repeat would be (latin rotates them too); in
sequential order each arm's K warm-ups come just before its own repeats, so each arm is warm when measured.
Warm-up slots carry repeat_index 0..K-1 with warmup=True; the runner must not store them as measurements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.errors import InvalidOption

ORDERS = ("interleaved", "sequential", "latin")


@dataclass(frozen=True)
class Slot:
    arm: str
    repeat_index: int
    warmup: bool = False


def order_runs(arms: list[str], repeats: int, order: str = "interleaved", warmup: int = 0) -> list[Slot]:
    """Every slot of the sweep, warm-ups included, in the order they should run."""
    if order not in ORDERS:
        raise InvalidOption(f"--order {order!r} is not one of {', '.join(ORDERS)}")
    if repeats < 0 or warmup < 0:
        raise InvalidOption(f"--repeat ({repeats}) and --warmup ({warmup}) cannot be negative")
    if len(set(arms)) != len(arms):
        raise InvalidOption(f"arm names repeat: {', '.join(a for a in dict.fromkeys(arms) if arms.count(a) > 1)}")
    if order == "sequential":
        return [
            Slot(arm, i, w) for arm in arms for w, count in ((True, warmup), (False, repeats)) for i in range(count)
        ]
    slots = [Slot(arm, w, True) for w in range(warmup) for arm in _round(arms, w, order)]
    slots += [Slot(arm, r) for r in range(repeats) for arm in _round(arms, r, order)]
    return slots


def _round(arms: list[str], r: int, order: str) -> list[str]:
    if order == "latin" and arms:
        shift = r % len(arms)
        return arms[shift:] + arms[:shift]
    return list(arms)


def remaining(slots: list[Slot], done: Iterable[tuple[str, int]]) -> list[Slot]:
    """The slots a resumed sweep still has to run, in their original order.

    done: (arm, repeat_index) of measurements already stored ok. Those measurements are dropped; an arm's
    warm-ups are kept while any of its measurements remain (a resumed process starts cold) and dropped once
    none do.
    """
    done = set(done)
    todo = {s for s in slots if not s.warmup and (s.arm, s.repeat_index) not in done}
    arms_left = {s.arm for s in todo}
    return [s for s in slots if (s.warmup and s.arm in arms_left) or (not s.warmup and s in todo)]
