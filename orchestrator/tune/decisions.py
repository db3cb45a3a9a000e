"""Why a candidate left a race, or how the race ended: a kind (`Exit`) with its numbers (`Decision`), worded in one
place (`words`).

A decision travels typed: the race keeps `Decision`s (race_settings.RaceState.left), the store keeps the kind and the
numbers (tune_events.kind, .detail: m025), a resume reads them back, and the answer counts kinds. Only `words` turns
one into text, so rewording a message changes what is printed, never a verdict.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum


class Exit(StrEnum):
    """A decision's kind; its value is what tune_events.kind stores (never rename one: stored rows hold it)."""

    INFEASIBLE = "infeasible"  # this build or machine cannot run it: out before the race
    FAILED = "failed"  # disqualified: a run failed or timed out
    NO_SPEED = "no_speed"  # disqualified: no decode speed could be read
    DRAFTED_NOTHING = "drafted_nothing"  # disqualified: speculates, drafted nothing (the program's speed, not its)
    OUTPUT_CHANGED = "output_changed"  # disqualified: greedy output differs from its control's
    LOOPS = "loops"  # disqualified: its text loops where plain decoding's does not
    DROPPED = "dropped"  # confidently slower than the yardstick
    PREDICTED_SLOWER = "predicted_slower"  # before round 1: predicted below plain decoding, interval and all
    WINNER = "winner"  # the end: the one survivor
    TIED = "tied"  # the end: one of the tied (or not separated) set
    REFUSED = "refused"  # the end: plain decoding's own text loops, nothing is raced

    @property
    def event(self) -> str:
        """The coarse event (tune_events.event): infeasible, disqualified, dropped, winner, tied, refused."""
        return "disqualified" if self in DISQUALIFYING else self.value

    @property
    def leaves(self) -> bool:
        return self in LEAVING

    @property
    def ends(self) -> bool:
        return self in ENDING

    @property
    def not_a_result(self) -> bool:
        """Its speed is no result of the setting (it never ran, or ran as something else): never shown as one."""
        return self in (Exit.INFEASIBLE, Exit.PREDICTED_SLOWER) or self in DISQUALIFYING


DISQUALIFYING = frozenset({Exit.FAILED, Exit.NO_SPEED, Exit.DRAFTED_NOTHING, Exit.OUTPUT_CHANGED, Exit.LOOPS})
LEAVING = frozenset({Exit.INFEASIBLE, *DISQUALIFYING, Exit.DROPPED, Exit.PREDICTED_SLOWER})
ENDING = frozenset({Exit.WINNER, Exit.TIED, Exit.REFUSED})


@dataclass(frozen=True)
class Decision:
    """One decision on one candidate, with the numbers that made it (None: not part of this kind)."""

    candidate: str
    kind: Exit
    round: int = 0  # 0: before the race (infeasible)
    speedup: float | None = None  # over plain decoding when decided (dropped, winner, tied)
    against: str | None = None  # dropped: the yardstick it was slower than (None: plain decoding)
    ratio: float | None = None  # dropped: its speed over the yardstick's
    runs: int | None = None  # dropped: its scores then
    p: float | None = None  # dropped: the one-sided p-value
    family: int | None = None  # dropped: the comparisons of its round (Holm)
    sweep_id: int | None = None  # a guard or the refusal: the run that showed it
    repeat: int | None = None  # ... its repeat, counted from 1
    status: str | None = None  # failed: failed or timeout; infeasible: the stop status before launch
    failure_class: str | None = None  # failed: the run's failure class
    first_diff_token: int | None = None  # output changed: where it first differs
    outcome: str | None = None  # winner, tied: the race's end (race.WINNER, EQUIVALENT, UNSEPARATED)
    note: str | None = None  # infeasible: the build's reason; a row stored before m025 whose numbers did not read

    def at(self, round_number: int) -> Decision:
        return replace(self, round=round_number)

    def detail(self) -> dict:
        """The numbers as stored (tune_events.detail): every field but those with columns of their own."""
        return {
            k: v
            for k, v in asdict(self).items()
            if v is not None and k not in ("candidate", "kind", "round", "speedup")
        }

    def to_dict(self) -> dict:
        """As an answer's JSON holds it: kind, round, numbers, and the words (for a reader, never read back)."""
        speedup = {} if self.speedup is None else {"speedup": self.speedup}
        return {"kind": self.kind.value, "round": self.round, **speedup, **self.detail(), "why": words(self)}

    @classmethod
    def from_dict(cls, candidate: str, data: dict | str) -> Decision:
        """Back from an answer's JSON. Words stored before decisions were typed were typed by migration m031; those
        it could not tell stay words, and do not read (ValueError)."""
        if isinstance(data, str):
            raise ValueError(f"{candidate}: {data!r} names no kind of decision")
        return _built(candidate, data["kind"], data.get("round", 0), data.get("speedup"), data)


FIELDS = {f.name for f in fields(Decision)} - {"candidate", "kind", "round", "speedup"}


def _built(candidate: str, kind: str, round_number, speedup, detail: dict) -> Decision:
    """A Decision from stored values: an unknown kind or a number that is not one raises ValueError or TypeError."""
    numbers = {k: v for k, v in detail.items() if k in FIELDS}
    for name in ("ratio", "p"):
        if numbers.get(name) is not None:
            numbers[name] = float(numbers[name])
    for name in ("runs", "family", "sweep_id", "repeat", "first_diff_token"):
        if numbers.get(name) is not None and not isinstance(numbers[name], int):
            raise TypeError(f"{candidate}: {name} {numbers[name]!r} is not a whole number")
    return Decision(
        candidate, Exit(kind), int(round_number or 0), None if speedup is None else float(speedup), **numbers
    )


def to_row(d: Decision) -> dict:
    """A tune_events row (less tune and workload): the kind and numbers, and the words for SQL and the report."""
    return {
        "candidate": d.candidate,
        "round": d.round,
        "event": d.kind.event,
        "kind": d.kind.value,
        "reason": words(d, event=False),
        "speedup": d.speedup,
        "detail": d.detail(),
    }


def from_row(row: dict) -> Decision:
    """A stored tune_events row back (store/tune_queries.events); ValueError where it does not read: a row m025
    could not tell the kind of (its text stays in `reason`), or one edited since."""
    if not row.get("kind"):
        raise ValueError(f"{row.get('candidate')}: {row.get('event')} {row.get('reason')!r} has no kind")
    try:
        return _built(row["candidate"], row["kind"], row["round"], row.get("speedup"), row.get("detail") or {})
    except (TypeError, KeyError, AttributeError) as exc:  # a detail edited into something else than numbers
        raise ValueError(f"{row.get('candidate')}: {type(exc).__name__}: {exc}") from None


# What each kind of leaving counts as in "no candidate beat plain decoding (...)", in this order.
COUNTED = {
    Exit.DROPPED: "dropped as slower",
    Exit.PREDICTED_SLOWER: "predicted slower",
    Exit.DRAFTED_NOTHING: "drafted nothing",
    Exit.OUTPUT_CHANGED: "changed the output",
    Exit.LOOPS: "looped",
    Exit.FAILED: "failed or could not run",
    Exit.NO_SPEED: "failed or could not run",
    Exit.INFEASIBLE: "failed or could not run",
}
OUTCOMES = {
    "winner": "the one survivor",
    "equivalent": "within the tie margin of the leader: practically the same",
    "unseparated": "not separated from the others within the budget",
}


def counted(left: dict[str, Decision]) -> str:
    """How many left for each reason, by kind: "3 dropped as slower, 2 drafted nothing"."""
    counts = Counter(COUNTED[d.kind] for d in left.values() if d.kind in COUNTED)
    return ", ".join(f"{counts[label]} {label}" for label in dict.fromkeys(COUNTED.values()) if counts[label])


def words(d: Decision, *, event: bool = True) -> str:
    """The one wording of a decision: "event: why" (event=False: the why alone)."""
    why = _why(d)
    return f"{d.kind.event}: {why}" if event else why


def _why(d: Decision) -> str:
    where = f"sweep {d.sweep_id}, repeat {d.repeat}" if d.sweep_id is not None and d.repeat is not None else None
    k = d.kind
    if k is Exit.INFEASIBLE:
        return f"{d.status} before launch: {d.note}" if d.status else (d.note or "this build cannot run it")
    if k is Exit.DROPPED and None not in (d.ratio, d.runs, d.p, d.family):
        return (
            f"slower than {d.against or 'plain decoding'}: {d.ratio:.2f}x its speed after {d.runs} run(s), "
            f"p={d.p:.2g} (Holm over {d.family})"
        )
    if k is Exit.PREDICTED_SLOWER and d.speedup is not None:
        return (
            f"predicted at {d.speedup:.2f}x plain decoding's speed {d.note or ''} before any run: below it, "
            f"interval and all (this machine's probe and the pair's acceptance; --measure races it anyway)"
        )
    if k in (Exit.WINNER, Exit.TIED):
        said = OUTCOMES.get(d.outcome or k.value, d.outcome or k.value)
        return said + (f", at {d.speedup:.2f}x plain decoding's speed" if d.speedup is not None else "")
    if where is None:  # stored before m025 in words whose numbers did not read: those words
        return d.note or k.value.replace("_", " ")
    if k is Exit.FAILED:
        return f"{d.status or 'failed'} ({d.failure_class or 'no class'}) in {where}"
    if k is Exit.NO_SPEED:
        return f"no decode speed could be read in {where}"
    if k is Exit.DRAFTED_NOTHING:
        return f"drafted nothing in {where}: no speculation result"
    if k is Exit.OUTPUT_CHANGED:
        token = f", first at token {d.first_diff_token}" if d.first_diff_token is not None else ""
        return (
            f"its output at temperature 0 differs from its control's ({where}{token}); --allow-output-change keeps it"
        )
    if k is Exit.LOOPS:
        return f"its output loops ({where}) where plain decoding's does not"
    if k is not Exit.REFUSED:  # a dropped row stored before m025 whose numbers did not read
        return d.note or k.value
    return (
        f"plain decoding's text loops on this workload ({where}): an n-gram draft wins there by copying the loop, "
        f"which says nothing about real text; give a prompt whose continuation does not loop"
    )
