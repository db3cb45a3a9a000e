"""`orch report --anonymize`: a report to hand on without this machine's paths or name. The written pages (report.md
and report.html) are rewritten in place: the builds, models and cache folders, the results file's folder, the working
folder and the home folder become `<builds>`, `<models>`, `<cache>`, `<results>`, `.` and `~` (longest first, so
a build under the home folder reads `<builds>/...`), any other absolute folder path is cut to its last folder and file
name (`.../bin/llama-server`), and the host name becomes `<host>`. Figures, recipes' text and verdicts stay as
they are; the pictures hold no path (their titles are sweep labels)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from orchestrator import config

# An absolute path of two folders or more, not inside a URL or another word: /root/.cache/x/bin/tool
OTHER_PATH = re.compile(r"(?<![\w:/.~<>-])/(?:[\w.+@-]+/)+(?=[\w.+@-]+/[\w.+@-])")


def places(db: Path | None) -> list[tuple[str, str]]:
    """(this machine's folder, what a shared report says instead), longest first."""
    named = [
        (config.builds_root(), "<builds>"),
        (config.models_dir(), "<models>"),
        (config.cache_dir(), "<cache>"),
        ((db or config.db_path()).absolute().parent, "<results>"),
        (Path.cwd(), "."),
        (Path.home(), "~"),
    ]
    found = {str(p): label for p, label in named if str(p) not in ("/", "")}
    return sorted(found.items(), key=lambda item: -len(item[0]))


def scrub(text: str, where: list[tuple[str, str]], host: str) -> str:
    for folder, label in where:
        text = re.sub(re.escape(folder) + r"(?=/|\b|$)", label, text)
    text = OTHER_PATH.sub(".../", text)
    return re.sub(rf"\b{re.escape(host)}\b", "<host>", text) if host else text


EMBEDDED = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")  # a picture inside the HTML: never rewritten


def rewrite(files: list[Path], db: Path | None) -> None:
    where, host = places(db), socket.gethostname()
    for path in files:
        if path.exists():
            text, kept, pos = path.read_text(), [], 0
            for m in EMBEDDED.finditer(text):
                kept += [scrub(text[pos : m.start()], where, host), m.group()]
                pos = m.end()
            path.write_text("".join([*kept, scrub(text[pos:], where, host)]))
