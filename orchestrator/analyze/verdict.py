"""The one plain sentence per sweep that every command ends with: what the result is, and what to distrust.

    sweep 1 (recipe_a.j2, 0c1e57098-cpu): no arm beats the baseline; best draft at 0.37x [0.14, 0.98]. Warnings: ...

An arm "beats" its reference (its control where it has one, else the baseline) only when its whole 95% interval
lies above 1x; an interval around 1x is "not distinguishable". Arms that drafted nothing are named as such, never
as the best arm: without a draft model they have no speedup (summary blanks it), with one the speedup is what the
draft cost for nothing, said beside the name; failed and skipped arms are named with their runs. A speedup measured on text that
loops (the arm's runs or its reference's: degenerate_loop) is never the headline nor "beats": the sentence names it
apart, with why.
"""

from __future__ import annotations

from itertools import groupby

SAID_APART = ("no_drafts", "degenerate_loop")  # warnings the sentence states in its own words
# The target's top two log-probabilities this close where two greedy texts part: a near tie, which a batched
# verification's other order of sums can flip (run/near_tie asks for them). Measured on this 2-core CPU (Qwen2.5-
# Coder 1.5B Q4_K_M, 0c1e57098): a batch moved the top-two gap by up to 0.23 against one-token decoding over 20
# positions, and the pair's open-prose text flipped at a gap of 0.154; 0.5 leaves that noise twice over.
NEAR_TIE_NATS = 0.5


def sweep_verdicts(rows: list[dict]) -> list[str]:
    """One sentence per sweep of analyze/summaries rows, in their order."""
    return [verdict(list(group)) for _, group in groupby(rows, key=lambda r: r["sweep"])]


def verdict(rows: list[dict]) -> str:
    """The verdict whole (`orch summary --explain`): the result, then every note (why each losing arm lost, in
    words; program and build differences; arms that drafted nothing, failed or were skipped; the warned arms)."""
    return both(rows)[0]


def gist(rows: list[dict]) -> str:
    """The verdict in one or two sentences, as the summary prints it under the why table: the result, then what
    stops an arm being read as a result (a crossed sweep's builds, drafted nothing, failed, skipped, looped, text
    that differs)."""
    return both(rows)[1]


def both(rows: list[dict]) -> tuple[str, str]:
    """(verdict, gist) of one sweep, its result worked out once: a kept summary holds both."""
    said, rows, on_loops = _result(rows)
    notes = ([f"On text that loops, not a win: {_loop_sentence(on_loops)}."] if on_loops else []) + _notes(rows)
    idle = [r["arm"] for r in rows if r["idle"]]
    skipped = [r["arm"] for r in rows if r["skipped"]]
    builds = _builds(rows)
    caveats = (
        ([f"builds, plain decoding: {'; '.join(builds)}"] if builds else [])
        + ([f"{_names(idle)} drafted nothing"] if idle else [])
        + [f"{r['arm']} failed {r['failed']} of {r['runs']} runs" for r in rows if r["failed"]]
        + ([f"{_names(skipped)} skipped"] if skipped else [])
        + ([f"{_names([r['arm'] for r in on_loops])} measured on text that loops"] if on_loops else [])
        + [f"{r['arm']}'s text differs from its control's {differs_at(r)}" for r in rows if _differs(r)]
        + ([f"{_busy(rows)} measured beside other work: intervals not to be trusted"] if _busy(rows) else [])
    )
    return (
        said + (" " + " ".join(notes) if notes else ""),
        said + (f" Note: {'; '.join(caveats)}." if caveats else ""),
    )


def _result(rows: list[dict]) -> tuple[str, list[dict], list[dict]]:
    """The verdict's first sentence; the rows its notes read (a length-matched reference left out); the arms
    measured on text that loops that the sentence did not name."""
    first = rows[0]
    workload = (first.get("params") or {}).get("workload")  # a recipe's name for its text (recipes/workloads)
    head = f"sweep {first['sweep']} ({first['recipe']}{f' on {workload}' if workload else ''}, {builds_of(rows)}): "
    base = next((r for r in rows if r["is_baseline"]), None)
    looping = {r["arm"] for r in rows if r.get("looped")}
    rows = [r for r in rows if not _length_match(r)]  # a reference run at an arm's length: that arm's yardstick
    measured = [
        r
        for r in rows
        if not r["is_baseline"]
        and not r.get("is_control")
        and r["speedup"] is not None
        and not (r["idle"] and r["idle"] == r["ok_runs"])
    ]  # drafted nothing: never a win, nor the best
    on_loops = [r for r in measured if r["arm"] in looping or r.get("vs") in looping]
    ranked = sorted((r for r in measured if r not in on_loops), key=lambda r: r["speedup"], reverse=True)
    if base is None:
        body = "no baseline arm, so no speedup; " + _fastest(rows)
    else:
        body = _against(base, ranked, "the baseline" if base["arm"] == "baseline" else f"the baseline ({base['arm']})")
        if on_loops and not ranked and base["ok_runs"]:
            body = f"no win: {_loop_sentence(on_loops)}"
            on_loops = []
    return head + body + ".", rows, on_loops


def differs_at(row: dict) -> str:
    """Where an arm's text parted from its control's, and a near tie as the cause only where the target's top two
    there show one (run/near_tie: the two texts' tokens, within NEAR_TIE_NATS)."""
    of = f" of {n}" if (n := row.get("generated_max")) else ""
    where = f"from token {row['first_diff_token']}{of}"
    margin = row.get("first_diff_margin")
    if row.get("first_diff_top_two") and margin is not None and margin < NEAR_TIE_NATS:
        return f"{where}, a near tie (the target's top two {margin:.3f} apart in log-probability)"
    return where


def _differs(row: dict) -> bool:
    return bool(row.get("outputs_differ")) and row.get("first_diff_token") is not None


def _names(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def _fastest(rows: list[dict]) -> str:
    """The fastest arm by decode speed with its interval, and whether the intervals tell it from the next."""
    ranked = sorted((r for r in rows if r["decode_tps"] is not None), key=lambda r: r["decode_tps"], reverse=True)
    if not ranked:
        return "no arm has a decode speed"
    first = ranked[0]
    low, high = first.get("ci_low"), first.get("ci_high")
    text = f"fastest {first['arm']} at {first['decode_tps']:.1f} tok/s" + (
        f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else ""
    )
    if len(ranked) > 1:
        second = ranked[1]
        apart = low is not None and second.get("ci_high") is not None and low > second["ci_high"]
        text += "" if apart else f", not distinguishable from {second['arm']} at {second['decode_tps']:.1f} tok/s"
    return text


def _against(base: dict, ranked: list[dict], label: str) -> str:
    if not base["ok_runs"]:
        return f"{label} has no ok run, so no speedup"
    if not ranked:
        return f"no arm has a speedup against {label}"
    # An arm shown to win comes before a higher point estimate whose interval spans 1x (seen on Gemma on an H100:
    # ngram-mod 1.83x [1.71, 1.97] was named "not distinguishable" behind ngram-cache's 1.90x [0.95, 3.80])
    best = next((r for r in ranked if r["speedup_low"] is not None and r["speedup_low"] > 1), ranked[0])
    figure = f"{best['arm']} at {_ratio(best)}"
    if best.get("vs") and best["vs"] != base["arm"]:  # like for like: against its control, the same program
        if len({r.get("vs") for r in ranked}) == 1:
            label = f"{best['vs']} (its control: the same program drafting nothing)"
        else:  # arms measured against different controls (an MTP arm's own target): each against its own
            label = "its control (the same program drafting nothing)"
            figure += f" against {best['vs']}"
    if best["speedup_low"] is not None and best["speedup_low"] > 1:
        return f"{figure} beats {label}"
    if best["speedup"] > 1:
        return f"best {figure}, not distinguishable from {label} (its interval spans 1x)"
    return f"no arm beats {label}; best {figure}"


def builds_of(rows: list[dict]) -> str:
    """The sweep's build, or a crossed sweep's builds (`orch run --build A,B` names its arms BUILD/ARM)."""
    crossed = list(dict.fromkeys(r["arm"].split("/", 1)[0] for r in rows if "/" in r["arm"]))
    return (
        f"{' and '.join(crossed)}, interleaved"
        if len(crossed) > 1 and rows[0]["build"] in crossed
        else rows[0]["build"]
    )


def _other_build(row: dict) -> bool:
    """A crossed sweep's (`orch run --build A,B`) other build's baseline, named BUILD/ARM against the first's."""
    mine, theirs = row["arm"].partition("/"), str(row.get("vs") or "").partition("/")
    return bool(mine[1] and theirs[1] and mine[0] != theirs[0])


def _length_match(row: dict) -> bool:
    return bool((row.get("params") or {}).get("length_of"))


def _loop_sentence(rows: list[dict]) -> str:
    best = max(rows, key=lambda r: r["speedup"])
    others = f" and {len(rows) - 1} other arm{'s' if len(rows) > 2 else ''}" if len(rows) > 1 else ""
    return (
        f"{best['arm']} at {_ratio(best)}{others} measured on generated text that loops (degenerate_loop), "
        f"which a copying draft predicts for free"
    )


def _ratio(row: dict) -> str:
    low, high = row["speedup_low"], row["speedup_high"]
    interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else " (one pair: no interval)"
    return f"{row['speedup']:.2f}x{interval}"


def _notes(rows: list[dict]) -> list[str]:
    idle = [
        f"{r['arm']} (its draft model still cost it: {_ratio(r)})"
        if r["speedup"] is not None and r["idle"] == r["ok_runs"]
        else r["arm"]
        for r in rows
        if r["idle"]
    ]
    failed = [
        f"{r['arm']} ({r['failed']} of {r['runs']}{', ' + r['failures'] if r['failures'] else ''})"
        for r in rows
        if r["failed"]
    ]
    skipped = [r["arm"] for r in rows if r["skipped"]]
    builds = _builds(rows)
    programs = [
        f"{r['arm']} runs at {_ratio(r)} the baseline: the programs differ by that much without speculation"
        for r in rows
        if r.get("is_control") and r["speedup"] is not None and not _other_build(r)
    ]
    programs += [
        f"{r['arm']} did not run, so speedups of its program's arms include the difference between programs"
        for r in rows
        if r.get("is_control") and not r["ok_runs"]
    ]
    noisy = [
        f"{r['arm']} ({', '.join(codes)})"
        for r in rows
        if (codes := [c for c in (r["warnings"] or "").split(",") if c and c not in SAID_APART])
    ]
    # Greedy text that changed under drafting: a finding, and what the speedup still compares; its cause is named
    # only where the target's top two show a near tie (differs_at)
    differs = [f"{r['arm']} {differs_at(r)}" for r in rows if _differs(r)]
    # Where a drafting arm's time went, from the build's own statistics (analyze/time_split): why it lost (an arm
    # that drafted nothing has no split, so no sentence: "Drafted nothing" says it)
    slower = [r["why_slower"] for r in rows if r.get("why_slower")]
    notes = [
        _listed("Builds, plain decoding:", builds),
        _listed("Program difference:", programs),
        "Why slower: " + " ".join(f"{reason}." for reason in slower) if slower else None,  # a sentence each
        f"Text differs from the control's: {'; '.join(differs)} (the speedup compares the same number of "
        f"tokens, not the same text after it; a batched verification can flip a near tie)."
        if differs
        else None,
        _listed("Drafted nothing:", idle),
        _listed("Failed:", failed),
        _listed("Skipped:", skipped),
        _listed("Warnings:", noisy),
        f"Measured beside other work: {_busy(rows)} (other programs used the machine during their runs, "
        f"busy_machine): their intervals are not to be trusted; measure alone."
        if _busy(rows)
        else None,
    ]
    return [note for note in notes if note]


def _busy(rows: list[dict]) -> str:
    """The arms measured beside other work (warning busy_machine), named; "" where none was."""
    busy = [r["arm"] for r in rows if "busy_machine" in (r["warnings"] or "").split(",")]
    return _names(busy) if busy else ""


def _builds(rows: list[dict]) -> list[str]:
    """A crossed sweep's builds without speculation (its other build's baseline against the first's): what its
    speedups compare against, said in both forms."""
    return [
        f"{r['arm']} runs at {_ratio(r)} {r['vs']}, measured interleaved"
        for r in rows
        if r.get("is_control") and r["speedup"] is not None and _other_build(r)
    ]


def _listed(label: str, names: list[str]) -> str | None:
    return f"{label} {', '.join(names)}." if names else None
