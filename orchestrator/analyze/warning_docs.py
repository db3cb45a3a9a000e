"""The warnings page (docs/warnings.md) and `orch summary --explain CODE`, both made from the one table the summary
uses (analyze/warning_kinds.WARNING_KINDS): what each code means, when it fires, what to do. tools/warnings_page.py
writes the page; a unit test checks that the page is what this module makes."""

from __future__ import annotations

from orchestrator.analyze.warning_kinds import WARNING_KINDS, WarningKind

BEGIN = "<!-- made by tools/warnings_page.py from analyze/warning_kinds.py: edit the table there, not here -->"
END = "<!-- end of the made part -->"


def kind(code: str) -> WarningKind | None:
    return next((k for k in WARNING_KINDS if k.code == code), None)


def codes() -> list[str]:
    return [k.code for k in WARNING_KINDS]


def explained(k: WarningKind) -> list[str]:
    """One code for a terminal, a paragraph a line: its gist, when it fires, what to do."""
    return [f"{k.code}: {k.gist}", f"when: {k.rule}", f"what to do: {k.action}"]


def page_part() -> str:
    """The page's made part: a table of every code, then a section per code."""
    lines = [BEGIN, "", "| code | what it means |", "|---|---|"]
    lines += [f"| [`{k.code}`](#{k.code}) | {k.gist} |" for k in WARNING_KINDS]
    for k in WARNING_KINDS:
        lines += [
            "",
            f"### {k.code}",
            "",
            f"{k.gist[0].upper()}{k.gist[1:]}.",
            "",
            f"**When:** {k.rule}",
            "",
            f"**What to do:** {k.action}",
        ]
    return "\n".join([*lines, "", END])


def with_part(page: str) -> str:
    """The page with its made part replaced by what this module makes now."""
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{page_part()}{tail}"
