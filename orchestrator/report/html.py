"""report.html: the markdown page as one self-contained HTML file (its PNGs inline as base64), for people who open
a file in a browser or attach it to a message. It converts exactly the markdown orch writes (headings, pipe
tables, bullet lists, images on their own line, paragraphs, `code` and **bold**), not markdown at large.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

IMAGE_RE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")
CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
.wide { overflow-x: auto; max-width: 100%; }  /* a table wider than the window scrolls, the page does not */
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; } code { background: #f5f5f5; padding: 0 0.2em; }
h2 { border-bottom: 1px solid #ddd; margin-top: 2em; }
"""


def render(markdown: str, image_dir: Path, title: str) -> str:
    body, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif m := re.match(r"^(#{1,6}) (.*)$", line):
            level = len(m.group(1))
            body.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = _take(lines, i, lambda s: s.startswith("|"))
            body.append(_table(block))
            i += len(block)
        elif line.startswith("- "):
            block = _take(lines, i, lambda s: s.startswith("- "))
            body.append("<ul>" + "".join(f"<li>{_inline(item[2:])}</li>" for item in block) + "</ul>")
            i += len(block)
        elif m := IMAGE_RE.match(line.strip()):
            body.append(_image(image_dir / m.group(2), m.group(1)))
            i += 1
        else:
            block = _take(lines, i, lambda s: bool(s.strip()) and not s.startswith(("|", "- ", "#", "![")))
            body.append("<p>" + " ".join(_inline(b) for b in block) + "</p>")
            i += len(block)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _take(lines: list[str], start: int, keep) -> list[str]:
    end = start
    while end < len(lines) and keep(lines[end]):
        end += 1
    return lines[start:end] or [lines[start]]


def _table(block: list[str]) -> str:
    rows = [_cells(line) for line in block]
    aligned = len(rows) > 1 and all(re.fullmatch(r":?-+:?", c.strip()) for c in rows[1])
    right = [c.strip().endswith(":") for c in rows[1]] if aligned else []
    head, body = (rows[0], rows[2:]) if aligned else ([], rows)
    out = ['<div class="wide"><table>']
    if head:
        out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>")
    for row in body:
        cells = [
            ('<td class="num">' if k < len(right) and right[k] else "<td>") + _inline(c) + "</td>"
            for k, c in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table></div>"


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip() for c in CELL_SPLIT_RE.split(inner)]


ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # a backslash escape: any ASCII punctuation (tables.md_text writes them)
HELD = re.compile("\ue000(\\d+)\ue001")


def _inline(text: str) -> str:
    """`code` and **bold**; backslash escapes as the characters they stand for; everything else escaped as text."""
    held: list[str] = []

    def hold(m: re.Match) -> str:
        held.append(m.group(1))
        return f"\ue000{len(held) - 1}\ue001"

    def restore(part: str) -> str:
        return HELD.sub(lambda m: html.escape(held[int(m.group(1))]) if int(m.group(1)) < len(held) else "", part)

    out = []
    for part in re.split(r"(`[^`]*`)", ESCAPED.sub(hold, text)):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{restore(html.escape(part[1:-1]))}</code>")
        else:
            out.append(restore(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(part))))
    return "".join(out)


def _image(path: Path, alt: str) -> str:
    if not path.exists():
        return f"<p>[missing image {html.escape(path.name)}]</p>"
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'
