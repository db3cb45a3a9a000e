"""What a draft setting keeps, replayed from one wide probe (run/acceptance_probe.py) instead of measured per setting.

At temperature 0 a pass drafts from the target's own text: the draft's top token at each position is a function of
the text before it, as long as every earlier drafted token matched. A probe at a wide window W with p_min 0 and
n_min 0 stops at each first mismatch and starts again right after the target's own token, so it reveals at nearly
every position q of the target's text whether the draft's token matched (and the draft's probability of it), and
after each miss the probabilities the draft gave its next tokens. Only the target's own token after a pass that
kept all W tokens is never drafted: those positions are `unknown`, and a replay bounds them both ways.

A replay of a setting (window w <= W, n_min, p_min) walks the same text as llama-speculative-simple at 0c1e57098
drafts (common/speculative.cpp, draft-simple): the draft decodes the pass's last token, then per position samples,
stops below p_min (that token not kept), keeps it, stops at the window, else decodes it; a draft shorter than n_min
is dropped after the draft model ran; the target keeps drafted tokens up to the first miss and adds its own. Each
pass: g tokens verified (a batch of g + 1), the draft's steps, the tokens accepted.

Where it can differ from llama.cpp: a near tie in the target's logits can resolve differently in a batch of g + 1
than in the probe's own batch (batched verification), so a setting's text can part from the probe's after some
token; the replay then stands for the probe's text, not the setting's. run/acceptance_probe compares the probe's
text with the plain target's to say whether it happened on this workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.parse.draft_trace import DraftPass


@dataclass(frozen=True)
class Position:
    """What the probe revealed at one token of the target's text (1-based q)."""

    match: bool  # the draft's top token, from the text before q, is the target's token
    p: float  # the draft's probability of its top token there
    after_miss: tuple[float, ...] = ()  # where it missed: its probabilities of the tokens it drafted next


@dataclass(frozen=True)
class Revealed:
    """The target's text of n tokens as the probe revealed it: q -> Position, absent where never drafted."""

    tokens: int
    positions: dict[int, Position]
    window: int  # the probe's own window
    n_predict: int  # the probe's -n: llama-speculative-simple caps each window by what is left of it

    @property
    def unknown(self) -> int:
        return self.tokens - len(self.positions)


@dataclass(frozen=True)
class Setting:
    window: int
    n_min: int = 0
    p_min: float = 0.0


@dataclass(frozen=True)
class Pass:
    kept: int  # g: drafted tokens the target verified (0 where the draft was dropped or cut to nothing)
    draft_steps: int  # the draft model's decodes for this pass (the last token's, then each kept token's but one)
    accepted: int
    dropped: int = 0  # drafted tokens thrown away (a draft shorter than n_min)


@dataclass(frozen=True)
class Replay:
    passes: tuple[Pass, ...]
    unknown_used: int  # positions of the text the probe never revealed that this replay had to assume

    @property
    def tokens(self) -> int:
        return sum(p.accepted + 1 for p in self.passes)

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / len(self.passes)

    @property
    def drafted(self) -> int:
        return sum(p.kept for p in self.passes)

    @property
    def accepted(self) -> int:
        return sum(p.accepted for p in self.passes)

    @property
    def mean_accept_len(self) -> float | None:
        """What llama.cpp's statistics line prints as `#mean acc len`: 1 + accepted / accept calls, where an accept
        call is every pass from the first that kept a draft on (common/speculative.cpp counts a pass only once some
        draft has named its implementation); None where no pass kept one."""
        first = next((i for i, p in enumerate(self.passes) if p.kept), None)
        return None if first is None else 1 + self.accepted / (len(self.passes) - first)

    @property
    def acceptance(self) -> float | None:
        """accepted / drafted, as llama.cpp's `accept` reads (kept drafts only)."""
        return self.accepted / self.drafted if self.drafted else None


def revealed(passes: list[DraftPass], window: int, n_predict: int) -> Revealed:
    """The positions a probe's passes revealed (parse/draft_trace.draft_passes of a run at `window`, p_min 0, -n
    n_predict)."""
    found: dict[int, Position] = {}
    last = 0  # the index of each pass's last token: 0 is the prompt's
    for one in passes:
        probs = [p for _, p in one.drafted]
        for j in range(one.accepted):
            found[last + 1 + j] = Position(True, probs[j])
        if one.accepted < len(probs):
            found[last + 1 + one.accepted] = Position(False, probs[one.accepted], tuple(probs[one.accepted + 1 :]))
        last += one.accepted + 1
    return Revealed(last, found, window, n_predict)


def replay(known: Revealed, setting: Setting, *, unknown_matches: bool) -> Replay:
    """The passes `setting` makes along the probe's text. A position the probe never revealed is taken as a match
    (unknown_matches) or a miss, drafted in both cases (p 1); a miss's later probabilities the probe never saw as
    kept (unknown_matches: fewer draft steps) or cut at once: the two replays bound the setting."""
    passes, used, last = [], 0, 0
    while last < known.tokens and last <= known.n_predict:
        left = max(known.n_predict - last - 1, 0)  # 0: no cap but the window (llama.cpp's n_max 0 means none)
        cap = min(setting.window, left) if left else setting.window
        kept, accepted, steps, missed, missed_at = 0, 0, 1, None, 0
        while kept < cap:
            q = last + 1 + kept
            if missed is None:
                pos = known.positions.get(q)
                if pos is None:
                    used += q <= known.tokens  # past the text's end (its last pass) it cannot matter
                    pos = Position(unknown_matches, 1.0)
                p = pos.p
            else:
                later = missed.after_miss
                step = q - missed_at - 1
                p = later[step] if step < len(later) else (1.0 if not unknown_matches else 0.0)
            if p < setting.p_min:
                break
            kept += 1
            if missed is None:
                if pos.match:
                    accepted += 1
                else:
                    missed, missed_at = pos, q
            if kept < cap:
                steps += 1
        dropped = kept if 0 < kept < setting.n_min else 0
        if dropped:
            kept, accepted = 0, 0
        passes.append(Pass(kept, steps, accepted, dropped))
        last += accepted + 1
    return Replay(tuple(passes), used)
