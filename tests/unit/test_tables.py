"""The one formatter: the Markdown format, and the older formats unchanged."""

import io
import json
from datetime import datetime
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from orchestrator import json_text, tables

ROWS = [
    {"arm": "baseline", "decode_tps": 135.25, "speedup": None, "note": "a|b"},
    {"arm": "draft:draft_max=8", "decode_tps": 8.5, "speedup": 1.234, "note": "two\nlines"},
]


def test_markdown_table():
    assert tables.render(ROWS, "md") == "\n".join(
        [
            "| arm | decode_tps | speedup | note |",
            "|---|---:|---:|---|",
            "| baseline | 135.2 | - | a\\|b |",  # numbers as in the text table; a pipe escaped, missing as -
            "| draft:draft_max=8 | 8.500 | 1.234 | two lines |",
        ]
    )


def test_markdown_columns_and_empty_rows():
    assert tables.render(ROWS, "md", ["speedup", "arm"]).splitlines()[:2] == ["| speedup | arm |", "|---:|---|"]
    assert tables.render([], "md", ["a", "b"]) == "| a | b |\n|---|---|"
    when = datetime(2026, 5, 1, 12, 30, 5)
    assert tables.render([{"at": when}], "md").splitlines()[-1] == "| 2026-05-01 12:30:05 |"


def test_existing_formats_unchanged():
    rows = [{"a": "x", "n": 1.5}, {"a": "longer", "n": None}]
    assert tables.render(rows) == "a       n\n------  -----\nx       1.500\nlonger  -"
    assert tables.render(rows, "csv").splitlines() == ["a,n", "x,1.5", "longer,"]
    assert tables.render(rows, "json") == '[\n{"a":"x","n":1.5},\n{"a":"longer","n":null}\n]'  # a row per line
    assert tables.render([], "json") == "[]"


def test_json_written_in_chunks_is_one_array_with_a_row_per_line():
    """The summary of every sweep (100 MB) is written JSON_CHUNK rows at a time: where the chunks meet, the
    array goes on as if it were one write, and the rows keep their one line each."""
    rows = [{"i": i, "name": f"arm {i}"} for i in range(2 * json_text.JSON_CHUNK + 3)]
    stream = io.BytesIO()
    json_text.write_json(rows, stream, ["i", "name", "extra"])
    text = stream.getvalue().decode()
    assert text == tables.render(rows, "json", ["i", "name", "extra"])
    assert json.loads(text) == [{**r, "extra": None} for r in rows]
    lines = text.splitlines()
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(rows) + 2
    assert all(line.endswith("},") for line in lines[1:-2]) and lines[-2].endswith("}")


@given(st.text())
def test_json_rows_hold_nothing_a_terminal_acts_on_and_read_back_as_written(text):
    """JSON rows go to stdout as they are (the summary of every sweep: not through the inert stream): DEL, the C1
    controls and the bidirectional overrides, which JSON may hold raw, are written as \\u escapes, so a JSON reader
    gets the same text back and a terminal sees nothing but printable characters."""
    written = json_text.json_rows([{"arm": text, "prompt": f"a\x9b31m{text}\u202eb\x7f"}]).decode()
    assert json.loads(written) == {"arm": text, "prompt": f"a\x9b31m{text}\u202eb\x7f"}
    assert tables.printable(written) == written


def test_json_has_no_nan_and_keeps_dates_and_odd_values():
    """NaN is no JSON: a number a run never printed is null, so every JSON reader takes the output."""
    rows = [{"x": float("nan"), "at": datetime(2026, 5, 1, 12, 30, 5), "blob": b"abc", "ratio": Decimal("1.5")}]
    assert json.loads(tables.render(rows, "json")) == [
        {"x": None, "at": "2026-05-01T12:30:05", "blob": "<3 bytes>", "ratio": 1.5}
    ]


def test_every_key_of_any_row_is_a_column():
    rows = [{"a": 1}, {"a": 2, "only_here": "x"}]
    assert json.loads(tables.render(rows, "json"))[1]["only_here"] == "x"
    assert tables.render(rows, "csv").splitlines()[0] == "a,only_here"


def test_a_text_table_gives_up_columns_in_the_order_given_until_it_fits():
    rows = [{"arm": "a" * 30, "x": "1" * 40, "y": "2" * 40, "speed": 1.5}]
    columns = ["arm", "x", "y", "speed"]
    text, left_out = tables.text_table(rows, columns, width=80, droppable=["y", "x"])
    assert left_out == ["y"] and text.splitlines()[0].split() == ["arm", "x", "speed"]
    assert max(map(len, text.splitlines())) <= 80
    assert tables.fit(rows, columns, 80, ["y", "x"]) == (["arm", "x", "speed"], ["y"])
    assert tables.text_table(rows, columns, width=200, droppable=["y"])[1] == []  # fits: nothing given up
    assert tables.text_table(rows, columns, droppable=["y"])[1] == []  # no width: nothing either
    assert tables.text_table(rows, columns)[0] == tables.render(rows, "table", columns)


def test_titles_stand_above_their_rows():
    text, _ = tables.text_table([{"a": 1}, {"a": 2}, {"a": 3}], ["a"], titles={0: "first", 2: "second"})
    assert text.splitlines() == ["a", "-", "first", "1", "2", "second", "3"]


def test_a_note_is_wrapped_to_the_tables_width():
    note = tables.fill("not shown: " + ", ".join(f"column_{i}" for i in range(30)), 60)
    assert all(len(line) <= 60 for line in note.splitlines()) and note.splitlines()[1].startswith("  ")


def test_csv_quotes_a_carriage_return_and_neutralises_formulas():
    """A CR in a name went out unquoted (Python's csv reader then failed on `orch summary -f csv`), and a cell
    starting with = ran as a formula in a spreadsheet: both are data now, numbers stay numbers."""
    import csv
    import io

    rows = [
        {
            "arm": "a\rb",
            "note": '=HYPERLINK("x")',
            "p": "+1",
            "at": "@sum",
            "dash": "-x",
            "neg": "-1.5",
            "n": -2,
            "line": "two\nlines",
            "sum": "-1+cmd|' /C calc'!A0",
            "exp": "-2e3",
            "pt": "+.5",
        }
    ]
    text = tables.render(rows, "csv")
    back = list(csv.reader(io.StringIO(text, newline="")))
    assert back == [
        list(rows[0]),
        [
            "a\rb",
            '\'=HYPERLINK("x")',
            "'+1",
            "'@sum",
            "'-x",
            "-1.5",
            "-2",
            "two\nlines",
            "'-1+cmd|' /C calc'!A0",
            "-2e3",
            "'+.5",
        ],
    ]  # a digit after - is no number alone
    assert text.count("\n") == 2 and '"two\nlines"' in text  # one line break between rows, one inside a field


def test_terminal_text_keeps_no_carriage_return():
    """A CR lets later text overwrite what a line said: gone from every printed line, newlines and tabs kept."""
    assert tables.printable("real\rfake\r\nnext\tcol") == "realfake\nnext\tcol"
    assert tables.cell("a\rb") == "ab"


_TERMINAL = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            " ",
            "\t",
            "\n",
            "\r",
            "\x1b",
            "[",
            "]",
            "0",
            ";",
            "m",
            "\x07",
            "\\",
            "P",
            "\x9b",
            "\u202e",
            "\u2067",
            "é",
            "\x7f",
        ]
    ),
    max_size=40,
)


@given(text=_TERMINAL, column=st.lists(_TERMINAL, max_size=5))
def test_the_fast_scans_decide_as_the_full_pattern_would(text, column):
    """printable and a table column's cleaning decide by one character class, not the escape patterns themselves:
    the same text comes out as if every line were cleaned by the patterns."""
    assert tables.printable(text) == tables._ACTIVE.sub("", text)
    assert tables._cleaned(column) == [tables._LINE_BREAKS.sub(" ", tables._ACTIVE.sub("", v)) for v in column]


@given(
    text=st.text(alphabet=st.sampled_from(["a", " ", "\\", "`", "*", "[", "]", "<", ">", "|", "\n", "_"]), max_size=30)
)
def test_markdown_text_escapes_each_active_character_once(text):
    """md_text escapes by one replace a character: the same as one substitution of them all, a backslash
    included (its escape is never escaped again)."""
    import re

    assert tables.md_text(text) == re.sub(r"([\\`*\[\]<>|])", r"\\\1", tables._one_line(text))


@given(
    words=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp")), min_size=1, max_size=30),
        min_size=1,
        max_size=60,
    ),
    width=st.integers(min_value=3, max_value=130),
    indent=st.sampled_from(["", "  ", "    "]),
    joiner=st.sampled_from([" ", "  ", " \t", "\n"]),
)
def test_prose_wraps_exactly_as_textwrap_does(words, width, indent, joiner):
    """tables.fill's fast path (words between single spaces, one regular expression a line) gives textwrap's lines;
    anything else is textwrap's own."""
    import textwrap

    text = joiner.join(words)
    assert tables.fill(text, width, indent) == textwrap.fill(
        text, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )
