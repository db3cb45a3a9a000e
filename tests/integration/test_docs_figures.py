"""The docs' pictures are made by a script from real runs (tools/docs_figures.py, `make docs-figures`), never pasted:
here it runs on the tiny models (--tiny) and must draw every picture docs/figures.md shows, and say how."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_figures_script_draws_every_picture_the_docs_show(cache_env, real_build, old_build, tmp_path):
    out = tmp_path / "figures"
    res = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "docs_figures.py"), "--tiny", "--out", str(out)],
        env={**cache_env, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    shown = set(re.findall(r"\]\(figures/([\w-]+\.png)\)", (ROOT / "docs" / "figures.md").read_text()))
    assert shown and {p.name for p in out.glob("*.png")} == shown
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in out.glob("*.png"))
    made = (out / "MADE_BY.txt").read_text()
    assert "orch tune recipes/tune.j2" in made and "orch history spec_defaults.j2" in made
    assert set(shown) == {p.name for p in (ROOT / "docs" / "figures").glob("*.png")}  # the committed ones too
    assert [p.name for p in tmp_path.iterdir() if p.name != "figures"] == []  # its work folder is gone
