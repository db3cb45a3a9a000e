"""No stored row can make a later read command fail: every JSON writer is total (json_text.to_json, json_text.jsonable),
so an integer beyond 64 bits or a NaN written by an older orch, a script or an import is stored as text or null,
and every read command still reads the file (issue 26: `--set n_predict=99999999999999999999` broke summary, watch
and repair on every later call, and travelled through export/import)."""

import json
import math

import orjson
from click.testing import CliRunner

from orchestrator import json_text, store
from orchestrator.cli import main
from tests.unit.test_exchange import add_sweep


def test_jsonable_keeps_what_fits_and_makes_the_rest_harmless():
    value = {
        "big": 10**30,
        "neg": -(10**30),
        "edge": 2**64 - 1,
        "low": -(2**63),
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "ok": [1, 2.5, "x", None, True],
        7: "key",
    }
    got = json_text.jsonable(value)
    assert got == {
        "big": str(10**30),
        "neg": str(-(10**30)),
        "edge": 2**64 - 1,
        "low": -(2**63),
        "nan": None,
        "inf": [None, None],
        "ok": [1, 2.5, "x", None, True],
        "7": "key",
    }
    orjson.dumps(got)  # what every reader writes with
    assert json.loads(json_text.to_json(value)) == got


def test_rows_of_values_no_reader_can_hold_are_read_by_every_command(tmp_path):
    db = tmp_path / "r.duckdb"
    with store.opened(db) as con:
        sweep = add_sweep(con)
        # As an older orch or a hand-written row stored them: straight into the JSON columns.
        con.execute(
            "UPDATE sweeps SET variables = ? WHERE id = ?",
            ['{"n_predict": 99999999999999999999, "p": 1e999, "s": "\\u001b]0;x\\u0007"}', sweep],
        )
        con.execute("UPDATE runs SET params = ?", ['{"n_predict": 99999999999999999999, "draft_max": -1e400}'])
    with store.opened(db) as con:  # and through the writers: stored as text and null
        store.create_sweep(
            con,
            {
                "recipe_path": "r.j2",
                "recipe_hash": "h",
                "recipe_text": "t",
                "status": "done",
                "variables": {"n_predict": 10**20, "p": math.nan},
                "build_id": "b@1",
                "build_name": "b",
                "started_at": store.utcnow(),
            },
        )
    for args in (
        ["summary", "--last", "2"],
        ["summary", "--last", "2", "--format", "json"],
        ["summary", "--last", "2", "--format", "csv"],
        ["summary", "--last", "2", "--format", "md"],
        ["summary", "--last", "2", "--wide"],
        ["runs", "--json"],
        ["runs"],
        ["show", "1"],
        ["watch", "--once"],
        ["sweeps"],
        ["sweeps", "--format", "json"],
        ["query", "SELECT * FROM sweeps", "--format", "json"],
        ["repair"],
        ["reparse"],
        ["export", "--out", str(tmp_path / "out")],  # report: in the integration test
        ["import", str(tmp_path / "out"), "--db", str(tmp_path / "b.duckdb")],
    ):
        result = CliRunner().invoke(main, [*args, *(["--db", str(db)] if "--db" not in args else [])])
        assert result.exit_code == 0, (args, result.output[-1500:], result.exception)
