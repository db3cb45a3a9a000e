"""The docs pages are outlines, not walls: each has `##` sections (a page of some length several), no paragraph or
list runs longer than a screen, and no heading skips a level. docs/cli.md is generated (mkdocs-click) and left
out. Every failure names the page and the line."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GENERATED = {"cli.md"}  # the CLI reference, made from the click commands when the site is built
PAGES = sorted(p.name for p in DOCS.glob("*.md") if p.name not in GENERATED)
LONGEST_BLOCK = 15  # source lines, wrapped at about 120 columns: about a screen
LONG_PAGE = 400  # words of prose: a page this long has several sections
HEADING = re.compile(r"^(#{1,6}) +\S")


def lines_outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every line, a fenced block's lines (fences included) blanked: they are examples."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            out.append((number, ""))
        else:
            out.append((number, "" if fenced else line))
    return out


def headings(page: str) -> list[tuple[int, int, str]]:
    """(line number, level, title) of each heading outside fenced blocks."""
    found = []
    for number, line in lines_outside_fences((DOCS / page).read_text()):
        if m := HEADING.match(line):
            found.append((number, len(m.group(1)), line[len(m.group(1)) :].strip()))
    return found


def blocks(page: str) -> list[tuple[int, int]]:
    """(first line number, length) of each paragraph or list: consecutive non-blank lines outside fenced blocks,
    tables and headings."""
    out, start, length = [], None, 0
    for number, line in [*lines_outside_fences((DOCS / page).read_text()), (0, "")]:
        if line.strip() and not line.lstrip().startswith("|") and not HEADING.match(line):
            start, length = (number, 0) if start is None else (start, length)
            length += 1
            continue
        if start is not None:
            out.append((start, length))
        start, length = None, 0
    return out


def words(page: str) -> int:
    return sum(len(line.split()) for _, line in lines_outside_fences((DOCS / page).read_text()))


def test_the_pages_are_there():
    assert len(PAGES) >= 15 and "statistics.md" in PAGES


@pytest.mark.parametrize("page", PAGES)
def test_a_page_has_sections_for_its_topics(page):
    """Its table of contents is a real outline: never empty, and several entries on a page of some length."""
    sections = [(n, title) for n, level, title in headings(page) if level == 2]
    assert sections, f"docs/{page}: no `##` heading, so its table of contents is empty; give each topic a section"
    if words(page) > LONG_PAGE:
        assert len(sections) >= 2, (
            f"docs/{page}: {words(page)} words under one `##` heading (line "
            f"{sections[0][0]}); a page over {LONG_PAGE} words needs a section per topic"
        )


@pytest.mark.parametrize("page", PAGES)
def test_no_paragraph_or_list_is_longer_than_a_screen(page):
    long = [(start, length) for start, length in blocks(page) if length > LONGEST_BLOCK]
    assert not long, "\n".join(
        f"docs/{page}:{start}: a paragraph or list of {length} lines (at most "
        f"{LONGEST_BLOCK}): split it, or give its parts headings"
        for start, length in long
    )


@pytest.mark.parametrize("page", PAGES)
def test_headings_start_at_the_title_and_skip_no_level(page):
    found = headings(page)
    assert found and found[0][1] == 1, f"docs/{page}:1: a page starts with its `#` title"
    titles = [n for n, level, _ in found if level == 1]
    assert titles == [found[0][0]], f"docs/{page}:{titles[-1]}: a second `#` title; use `##` for a section"
    for (_, before, _), (number, level, title) in zip(found, found[1:]):
        assert level <= before + 1, (
            f"docs/{page}:{number}: heading {'#' * level} {title!r} comes under a "
            f"{'#' * before} heading: a level is skipped"
        )


def test_where_to_add_is_the_one_list_and_design_links_it():
    """One list of which files a change touches: docs/where-to-add.md; other pages link it, none keeps a copy."""
    for page in PAGES:
        if page == "where-to-add.md":
            continue
        for number, _, title in headings(page):
            assert "where to add" not in title.lower(), f"docs/{page}:{number}: a second 'where to add' list"
    assert "(where-to-add.md)" in (DOCS / "design.md").read_text()
