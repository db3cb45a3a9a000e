"""A reader that stops early (`orch summary | head`) ends the output, not the command: every format of the real
`orch` exits 0 without a traceback, and what goes to stderr (CSV's and JSON's verdicts) still gets there. The reader
here closes its end before orch writes a byte, so every write meets a broken pipe."""

import os
import subprocess

import pytest
from unit.test_exchange import add_sweep

from orchestrator import store


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json"])
def test_a_reader_that_stops_early_ends_the_output_not_the_command(orch_exe, tmp_path, fmt):
    db = tmp_path / "r.duckdb"
    with store.opened(db) as con:
        for _ in range(3):
            add_sweep(con)
    child = subprocess.Popen(
        [orch_exe, "summary", "--last", "3", "--format", fmt, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )
    child.stdout.close()  # the reader is gone before orch writes
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err
    assert err.count("verdict: sweep") == (3 if fmt in ("csv", "json") else 0)
