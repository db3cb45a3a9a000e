"""Write docs/warnings.md's made part from the warnings table (orchestrator/analyze/warning_kinds.py):

.venv/bin/python tools/warnings_page.py
"""

from pathlib import Path

from orchestrator.analyze import warning_docs

PAGE = Path(__file__).resolve().parents[1] / "docs" / "warnings.md"

if __name__ == "__main__":
    PAGE.write_text(warning_docs.with_part(PAGE.read_text()))
    print(PAGE)
