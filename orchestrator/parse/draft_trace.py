"""Every pass of a speculative run as its debug log tells it (llama-speculative-simple at -lv 5): the tokens the
draft proposed with its probability of each, how many the target accepted, and the target's own token that ended
the pass. The acceptance probe (run/acceptance_probe.py) reads a pair's acceptance from one such run.

    - seq_id 0, draft candidate   0, pos   2:   9263 (   1.000) ' decre'     (0c1e57098; older: no seq_id)
    accepted 3/3 draft tokens, the last target token is: (28649)

Candidate 0 at each position is the drafted token (candidates 1 and 2 are the runners-up). It is printed before
the p_min check, so a draft cut there printed one position more than it kept: a pass keeps its first N.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.errors import ParseError

from .acceptance import DRAFT_LINE_RE, REPLAY_RE
from .lines import clean_lines

CANDIDATE_RE = re.compile(r"draft candidate\s+0, pos\s+(\d+):\s+(-?\d+) \(\s*(-?[\d.]+|nan|-?inf)\)")
LAST_TOKEN_RE = re.compile(r"the last target token is: \((-?\d+)\)")


@dataclass(frozen=True)
class DraftPass:
    drafted: tuple[tuple[int, float], ...]  # (token id, the draft's probability of it) per drafted position
    accepted: int  # drafted tokens the target kept, from the first
    last_token: int  # the target's own token that ended the pass


def draft_passes(text: str) -> list[DraftPass]:
    """The passes of a -lv 5 speculative-simple log, in order; passes that drafted nothing have no tokens.
    ParseError where the log cannot be read as passes: no `accepted` line, a count the candidates do not hold, or
    checkpoint replays (a target that cannot drop part of a sequence re-verifies, which no probe can replay)."""
    passes: list[DraftPass] = []
    proposed: list[tuple[int, float]] = []
    for line in clean_lines(text):
        if m := CANDIDATE_RE.search(line.text):
            pos = int(m.group(1))
            if pos == 0:
                proposed = []
            if pos == len(proposed):
                proposed.append((int(m.group(2)), float(m.group(3))))
        elif REPLAY_RE.match(line.text):
            raise ParseError(
                "the log shows checkpoint replays (a target that cannot drop part of a sequence): its "
                "passes cannot be replayed for other settings"
            )
        elif m := DRAFT_LINE_RE.match(line.text):
            accepted, drafted = int(m.group(1)), int(m.group(2))
            last = LAST_TOKEN_RE.search(line.text)
            if drafted > len(proposed) or accepted > drafted or last is None:
                raise ParseError(
                    f"pass {len(passes) + 1}: `accepted {accepted}/{drafted}` after {len(proposed)} drafted candidates"
                )
            passes.append(DraftPass(tuple(proposed[:drafted]) if drafted else (), accepted, int(last.group(1))))
            proposed = []
    if not passes:
        raise ParseError("no `accepted A/N draft tokens` line: run llama-speculative-simple with -lv 5")
    return passes


def pass_counts(text: str) -> list[tuple[int, int]]:
    """(drafted, accepted) of every pass of a -lv 5 speculative-simple log, in order, from its `accepted A/N` lines
    alone: what an n-gram method's run tells (its lookups print no candidates). ParseError as draft_passes."""
    out = []
    for line in clean_lines(text):
        if REPLAY_RE.match(line.text):
            raise ParseError(
                "the log shows checkpoint replays (a target that cannot drop part of a sequence): its "
                "passes cannot be priced one by one"
            )
        if m := DRAFT_LINE_RE.match(line.text):
            accepted, drafted = int(m.group(1)), int(m.group(2))
            if accepted > drafted:
                raise ParseError(f"pass {len(out) + 1}: `accepted {accepted}/{drafted}`")
            out.append((drafted, accepted))
    if not out:
        raise ParseError("no `accepted A/N draft tokens` line: run llama-speculative-simple with -lv 5")
    return out
