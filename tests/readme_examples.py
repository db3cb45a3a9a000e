"""The examples of the README and of every page in docs/, read for the docs tests: every fenced block has a kind,
and every kind is checked.

    sh      command lines: `make TARGET`, `orch ...` (a synopsis: [optional] parts, A|B choices, PLACEHOLDERS),
            `.venv/bin/python -c ...`; a line that starts with spaces continues the one above
    output  what `make demo` and `make demo-tiny` print at their end
    toml    a --vars file
    tree    the source layout

tests/unit/test_docs.py parses every command line with orch's own click parser; tests/integration/test_readme.py
runs the ones that are complete commands against a real results file made by make demo-tiny's recipes.
`blocks()` reads the README alone (its demo tables); `all_blocks()` the README and every docs page.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
KINDS = ("sh", "output", "toml", "tree")


@dataclass(frozen=True)
class Block:
    kind: str
    text: str
    line: int  # of the opening fence, for messages
    source: str = "README.md"


def pages() -> list[Path]:
    """The README and every docs page, in a stable order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(text: str | None = None, source: str = "README.md") -> list[Block]:
    text = README.read_text() if text is None else text
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append(Block(lines[i][3:].strip(), "\n".join(lines[i + 1:end]), i + 1, source))
            i = end
        i += 1
    return out


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page.read_text(), str(page.relative_to(ROOT)))]


def commands(block: Block) -> list[str]:
    """The command lines of an sh block: comments dropped, a quoted argument running over several lines kept
    whole, a line that starts with spaces joined to the command above."""
    out, pending = [], ""
    for line in block.text.splitlines():
        if pending:
            pending += "\n" + line
        elif line[:1].isspace() and line.strip() and out:
            out[-1] += " " + line.strip()
            continue
        else:
            pending = line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        if words:
            out.append(pending)
        pending = ""
    assert not pending, f"{block.source} line {block.line}: unclosed quote in {pending!r}"
    return out


def words(command: str) -> list[str]:
    return shlex.split(command, comments=True)


def is_synopsis(command: str) -> bool:
    """A command line with optional parts, choices or placeholders: parsed, never run."""
    return any(w.startswith("[") or w.endswith("]") or "|" in w or w.isupper() or w.rstrip(".").isupper() or
               w == "..." for w in words(command))


PLACEHOLDERS = {"RUN": "1", "SWEEP": "1", "TUNE": "1", "N": "2", "DIR": "out", "COMMIT": "0c1e570", "RECIPE": "recipes/recipe_a.j2",
                "URL": "https://example.invalid/llama.cpp.git", "PATH": "llama.cpp", "FILE": str(README)}


def variants(command: str) -> list[list[str]]:
    """Concrete argument lists a synopsis stands for: without its optional parts, with all of them, and with each
    alternative of every choice (`[--wide | --columns x]`: each side; `--format table|md`: each value).
    Placeholders become sample values."""
    items: list = []  # a word, or a [bracketed] group as its alternatives (lists of words)
    group = None
    for word in words(command):
        if group is None and word.startswith("["):
            group, word = [[]], word[1:]
        if group is None:
            items.append(word)
            continue
        closing = word.endswith("]")
        word = word[:-1] if closing else word
        if word == "|":
            group.append([])
        elif word:
            group[-1].append(word)
        if closing:
            items.append(group)
            group = None
    required = [w for w in items if isinstance(w, str)]
    full = [x for w in items for x in ([w] if isinstance(w, str) else w[0])]
    sides = [required + side for w in items if isinstance(w, list) and len(w) > 1 for side in w[1:]]
    out = []
    for tokens in [required, full, *sides]:
        tokens = [t for t in tokens if t != "..."]
        first = [t.split("|")[0] if _choice(t) else t for t in tokens]
        out.append(first)
        out += [first[:i] + [alt] + first[i + 1:] for i, t in enumerate(tokens) if _choice(t) for alt in t.split("|")[1:]]
    return [[PLACEHOLDERS.get(t.rstrip("."), t) for t in tokens] for tokens in out]


def _choice(word: str) -> bool:
    """`a|b|c`: a value that may be any of them (never a quoted SQL or text argument)."""
    return "|" in word and " " not in word


def shape(text: str) -> dict:
    """What a demo's table must share with the README's copy, whatever the noise: columns, sweeps, arms, what
    it leaves out, and a verdict per sweep."""
    lines = text.splitlines()
    noted, in_note = [], False
    for x in lines:  # the note and its wrapped lines (a wrapped warning's lines are the warning's)
        in_note = x.startswith("not shown: ") or (in_note and x.startswith("  "))
        noted += [x.strip()] if in_note else []
    note = " ".join(noted)
    table = lines[2:next(i for i, x in enumerate(lines) if x.startswith(("not shown: ", "warning: ", "verdict: ")))]
    return {"header": lines[0].split(), "titles": [x for x in table if x.startswith("sweep ")],
            "arms": [x.split()[0] for x in table if not x.startswith("sweep ")], "note": note,
            "verdicts": [x.split("): ")[0] for x in lines if x.startswith("verdict: ")]}


def assert_shows(shown: str, printed: str, *, real_model: bool) -> None:
    """The README's copy of a demo's table (shown) and what the demo printed here: the same sweeps, arms, verdicts
    and core columns. Real runs' warnings (high_cv, no_drafts, ...) come and go with the machine's noise, and the
    warnings column's width with them, so which columns the table gives up may differ; which arms decode past -n
    (and so get a control at their count, `control~ARM`) depends on the text a real model's arithmetic yields (so
    those are left out for it). Speeds differ by machine too (four digits here, five on a fast one), and a wider
    figure or one more warning can push one more column out of 120: compared without the header and the note."""
    readme, made = shape(shown), shape(printed)
    for table in (readme, made) if real_model else ():
        table["arms"] = [arm for arm in table["arms"] if "~" not in arm]
    assert {k: v for k, v in readme.items() if k not in ("header", "note")} == \
        {k: v for k, v in made.items() if k not in ("header", "note")}
    for columns in (readme["header"], made["header"]):
        assert {"arm", "decode_tps", "acceptance", "speedup", "speedup_ci95", "warnings"} <= set(columns)
    for text in (shown, printed):
        table = text.split("\nwarning: ", 1)[0].split("\nverdict: ", 1)[0]
        assert max(map(len, table.splitlines())) <= 120, table
        warnings = [x for x in text.splitlines() if x.startswith("warning: ")]
        assert all(re.match(r"warning: [a-z_]+: ", x) for x in warnings), warnings  # a line per kind
        assert "nvidia-smi" not in text  # a CPU build: no GPU advice
