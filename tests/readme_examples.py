"""The examples of the README and of every page in docs/, read for the docs tests: every fenced block has a kind,
and every kind is checked.

    sh      command lines: `make TARGET`, `orch ...` (a synopsis: [optional] parts, A|B choices, PLACEHOLDERS),
            `.venv/bin/python -c ...`; a line that starts with spaces continues the one above
    output  what `make demo` and `make demo-tiny` print at their end
    toml    a --vars file
    tree    the source layout
    python  a Python example (orchestrator.results), run against that file

tests/unit/test_docs.py parses every command line with orch's own click parser; tests/integration/test_readme.py
runs the ones that are complete commands against a real results file made by make demo-tiny's recipes.
`blocks()` reads the README alone (its demo tables); `all_blocks()` the README and every docs page.

A page may include a section of another file, as the site does (pymdownx.snippets, mkdocs.yml): the line
`--8<-- "README.md:demo-output"` is the README's lines between `<!-- --8<-- [start:demo-output] -->` and
`<!-- --8<-- [end:demo-output] -->`. `blocks()` reads such a line as the blocks it includes, each one the included
file's own (its source and line), so getting-started's copy of make demo's output is the README's block, once.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
KINDS = ("sh", "output", "toml", "tree", "python")


@dataclass(frozen=True)
class Block:
    kind: str
    text: str
    line: int  # of the opening fence, for messages
    source: str = "README.md"


def pages() -> list[Path]:
    """The README and every docs page, in a stable order."""
    return [README, *sorted(DOCS.glob("*.md"))]


INCLUDE = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<section>[a-z][-_0-9a-z]*))?"$')
SECTION_MARKER = re.compile(r"--8<-- \[(start|end):[a-z][-_0-9a-z]*\]")  # a section's ends, included by nothing
MARKER = "<!-- --8<-- [{}:{}] -->"


def section(path: str, name: str | None) -> tuple[int, str]:
    """What `--8<-- "PATH:NAME"` includes: (the number of its first line in PATH, its text); the whole file
    without NAME. The site's build fails on a missing file or section (check_paths), and so does this."""
    lines = (ROOT / path).read_text().splitlines()
    if name is None:
        return 1, "\n".join(lines)
    start, end = MARKER.format("start", name), MARKER.format("end", name)
    assert lines.count(start) == 1 and lines.count(end) == 1, f"{path}: no single section {name!r} ({start} ... {end})"
    first, last = lines.index(start) + 1, lines.index(end)
    assert first <= last, f"{path}: section {name!r} ends before it starts"
    return first + 1, "\n".join(lines[first:last])


def includes(text: str, source: str = "README.md") -> list[tuple[int, str, str | None]]:
    """The include lines of a page outside its fenced blocks: (line number, path, section or None)."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and "--8<--" in line and not SECTION_MARKER.search(line):
            m = INCLUDE.match(line)
            assert m, f'{source} line {number}: an include is `--8<-- "FILE:SECTION"` on a line of its own: {line!r}'
            out.append((number, m["path"], m["section"]))
    return out


def blocks(text: str | None = None, source: str = "README.md") -> list[Block]:
    """The fenced blocks of a page, in order; an include line stands for the blocks it includes (as their own
    file's: its path and line numbers)."""
    text = README.read_text() if text is None else text
    included = {number: (path, name) for number, path, name in includes(text, source)}
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append(Block(lines[i][3:].strip(), "\n".join(lines[i + 1 : end]), i + 1, source))
            i = end
        elif i + 1 in included:
            path, name = included[i + 1]
            first, part = section(path, name)
            out += [replace(b, line=b.line + first - 1) for b in blocks(part, path)]
        i += 1
    return out


def all_blocks() -> list[Block]:
    """Every block of the README and the docs pages, once: a block a page includes is its own file's."""
    return list(dict.fromkeys(b for page in pages() for b in blocks(page.read_text(), str(page.relative_to(ROOT)))))


def prose(text: str) -> str:
    """A page with its fenced blocks' lines (fences included) blanked: the running text, at its own line numbers."""
    out, fenced = [], False
    for line in text.splitlines():
        out.append("" if fenced or line.startswith("```") else line)
        fenced ^= line.startswith("```")
    return "\n".join(out)


def code_spans(text: str) -> list[tuple[int, str]]:
    """The inline code of a page's running text (`like this`), as (line number, its text with a line break or a
    run of spaces made one space); a span may wrap onto the next line, never past a paragraph."""
    text = prose(text)
    return [
        (text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split()))
        for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text)
        if "\n\n" not in m.group(1)
    ]


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
    return any(
        w.startswith("[") or w.endswith("]") or "|" in w or w.isupper() or w.rstrip(".").isupper() or w == "..."
        for w in words(command)
    )


PLACEHOLDERS = {
    "RUN": "1",
    "SWEEP": "1",
    "TUNE": "1",
    "N": "2",
    "DIR": "out",
    "COMMIT": "0c1e570",
    "RECIPE": "recipes/recipe_a.j2",
    "URL": "https://example.invalid/llama.cpp.git",
    "PATH": "llama.cpp",
    "FILE": str(README),
}


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
        out += [
            first[:i] + [alt] + first[i + 1 :] for i, t in enumerate(tokens) if _choice(t) for alt in t.split("|")[1:]
        ]
    return [[PLACEHOLDERS.get(t.rstrip("."), t) for t in tokens] for tokens in out]


def _choice(word: str) -> bool:
    """`a|b|c`: a value that may be any of them (never a quoted SQL or text argument)."""
    return "|" in word and " " not in word


def check_orch(command: str, *, partial: bool = False) -> int:
    """That an orch line (a synopsis: every variant of it) names a real command and options, values and types orch's
    own click parser accepts; how many variants were checked. partial: a mention in running text (`orch run`,
    `orch compare --fail-on regression`) may leave out required arguments, or stop at a group (`orch models`).
    Fails with an AssertionError that names the line and what is wrong."""
    import click

    from orchestrator.cli import main

    checked = 0
    for args in variants(command):
        cmd, path, args = main, [], args[1:]
        while isinstance(cmd, click.Group) and args and args[0] in cmd.list_commands(None):
            path.append(args[0])
            cmd = cmd.get_command(None, args.pop(0))
        name = " ".join(["orch", *path])
        if isinstance(cmd, click.Group):
            assert not args or args[0].startswith("-"), f"{command!r}: no command {name} {args[0]}"
            assert partial, f"{command!r}: {name} needs a command ({', '.join(cmd.list_commands(None))})"
            known = {o for p in [*cmd.params, cmd.get_help_option(click.Context(cmd))] if p for o in p.opts}
            unknown = [a for a in args if a.split("=")[0] not in known]
            assert not unknown, f"{command!r}: {name} has no option {unknown[0]}"
        else:
            if partial and "--help" in args:  # `orch compare --help`: only that the command has it
                assert "--help" in cmd.get_help_option_names(click.Context(cmd)), f"{command!r}: {name} has no --help"
                args = [a for a in args if a != "--help"]
            last = [p for p in cmd.params if isinstance(p, click.Option) and args and args[-1] in p.opts]
            if partial and last and not last[0].is_flag and not last[0].count:  # `orch report --tune`: no value
                args = args[:-1]
            try:
                cmd.make_context(name, list(args))
            except click.MissingParameter as exc:
                assert partial, f"{command!r} as {args}: {exc.format_message()}"
            except click.ClickException as exc:
                raise AssertionError(f"{command!r} as {args}: {exc.format_message()}") from None
        checked += 1
    return checked


def check_make(command: str) -> None:
    """That a `make TARGET [NAME=value ...]` line names a Makefile target and variables the Makefile reads."""
    makefile = (ROOT / "Makefile").read_text()
    target, *assignments = [w.strip("[]") for w in words(command)[1:]]
    assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"make {target}: no such target in the Makefile"
    for name in (a.split("=")[0] for a in assignments):
        assert f"$({name})" in makefile, f"make {target} {name}=...: the Makefile never reads {name}"


def shape(text: str) -> dict:
    """What a demo's table must share with the README's copy, whatever the noise: columns, sweeps, arms, what
    it leaves out, and a verdict per sweep."""
    lines = text.splitlines()
    noted, in_note = [], False
    for x in lines:  # the note and its wrapped lines (a wrapped warning's lines are the warning's)
        in_note = x.startswith("not shown: ") or (in_note and x.startswith("  "))
        noted += [x.strip()] if in_note else []
    note = " ".join(noted)
    table = lines[
        2 : next(i for i, x in enumerate(lines) if x.startswith(("not shown: ", "why ", "warning: ", "verdict: ")))
    ]
    return {
        "header": lines[0].split(),
        "titles": [x for x in table if x.startswith("sweep ")],
        "arms": [x.split()[0] for x in table if not x.startswith("sweep ")],
        "note": note,
        "verdicts": [x.split("): ")[0] for x in lines if x.startswith("verdict: ")],
    }


def assert_shows(shown: str, printed: str, *, real_model: bool) -> None:
    """The README's copy of a demo's table (shown) and what the demo printed here: the same sweeps, arms, verdicts
    and core columns. Real runs' warnings (high_cv, no_drafts, ...) come and go with the machine's noise, and the
    warnings column's width with them, so which columns the table gives up may differ; which arms decode past -n
    (and so get a control at their count, `control~ARM`) depends on the text a real model's arithmetic yields (so
    those are left out for it). Speeds differ by machine too (four digits here, five on a fast one), and a wider
    figure or one more warning can push one more column out of 120 (acceptance and warnings, named in the note):
    compared without the header and the note."""
    readme, made = shape(shown), shape(printed)
    for table in (readme, made) if real_model else ():
        table["arms"] = [arm for arm in table["arms"] if "~" not in arm]
    compared = [{k: v for k, v in table.items() if k not in ("header", "note")} for table in (readme, made)]
    assert compared[0] == compared[1], f"the copy shows {compared[0]}; the demo printed {compared[1]}:\n{printed}"
    for table in (readme, made):  # acceptance and warnings may be given up for width (a run's warnings vary),
        # never silently: the note names them, and the warning lines under the table stay
        assert {"arm", "decode_tps", "speedup", "speedup_ci95"} <= set(table["header"])
        assert all(c in table["header"] or c in table["note"] for c in ("acceptance", "warnings")), table
    for text in (shown, printed):
        table = text.split("\nwarning: ", 1)[0].split("\nverdict: ", 1)[0]
        assert max(map(len, table.splitlines())) <= 120, table
        warnings = [x for x in text.splitlines() if x.startswith("warning: ")]
        assert all(re.match(r"warning: [a-z_]+: ", x) for x in warnings), warnings  # a line per kind
        assert "nvidia-smi" not in text  # a CPU build: no GPU advice
