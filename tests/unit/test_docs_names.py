"""The names a docs page or the README gives exist: every table and view it names is in a results file migrated
today (as docs_hooks.py makes the schema page), every orch command it writes inline is a real command with real
options, and every `make X` a Makefile target. Each failure names the page, its line and the name."""

import re
import tempfile
from pathlib import Path

import pytest
import readme_examples

ROOT = readme_examples.ROOT


def pages() -> list[tuple[str, str]]:
    """(name as in messages, text) of the README and every docs page."""
    return [(str(page.relative_to(ROOT)), page.read_text()) for page in readme_examples.pages()]


@pytest.fixture(scope="module")
def schema() -> dict[str, str]:
    """Every table and view of a fresh results file, migrated as orch migrates one: name -> "table" or "view"."""
    from orchestrator import store

    with tempfile.TemporaryDirectory(prefix="orch-docs-names-") as tmp, store.opened(Path(tmp) / "x.duckdb") as con:
        rows = con.execute(
            "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    found = {name: "view" if kind == "VIEW" else "table" for name, kind in rows}
    assert {"runs", "sweeps", "run_summary", "arm_summary"} <= set(found)
    return found


# --- SQL: the names after FROM and JOIN ------------------------------------------------------------------------------

NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
NOT_TABLES = ("EXTRACT", "TRIM", "SUBSTRING", "OVERLAY", "POSITION")  # `EXTRACT(epoch FROM ts)`: FROM, no table


def sql_names(sql: str) -> list[str]:
    """The tables and views a query reads: each name after FROM or JOIN (and after the commas of `FROM a x, b y`),
    less a subquery or table function `FROM f(...)`, a quoted file, the query's own WITH names, DuckDB's catalogue
    (information_schema, duckdb_*), and a FROM that reads no table (`IS [NOT] DISTINCT FROM`, `EXTRACT(x FROM ts)`
    and the like)."""
    own = {n.lower() for n in re.findall(r"(?i)\b(\w+)\s+AS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(", sql)}
    out = []
    for m in FROM.finditer(sql):
        opened = innermost_open(sql[: m.start()])
        if opened is not None and re.search(rf"(?i)\b(?:{'|'.join(NOT_TABLES)})\s*$", sql[:opened]):
            continue
        for item in m.group(1).split(","):
            schema, _, table = item.split()[0].rpartition(".")
            if schema.lower() in ("information_schema", "pg_catalog") or table.lower().startswith("duckdb_"):
                continue
            if table.lower() not in own:
                out.append(table)
    return out


CLAUSES = (
    "WHERE|GROUP|ORDER|LIMIT|JOIN|ON|USING|LEFT|RIGHT|INNER|OUTER|FULL|CROSS|NATURAL|UNION|EXCEPT|INTERSECT|"
    "QUALIFY|HAVING|WINDOW|SELECT|SAMPLE|PIVOT|UNPIVOT"
)
# FROM or JOIN, then a name (or `a x, b y`: names with aliases and commas) not followed by `(` (a table function)
FROM = re.compile(
    rf"(?i)(?<!DISTINCT )\b(?:FROM|JOIN)\s+((?:{NAME}(?:\s+(?:AS\s+)?(?!(?:{CLAUSES})\b)\w+)?\s*,\s*)*"
    rf"{NAME})(?!\w|\s*\()"
)


def innermost_open(before: str) -> int | None:
    """Where the innermost parenthesis still open at the end of `before` opens (None: at the top level)."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(before[i], 0)
        if depth < 0:
            return i
    return None


def sql_texts(page: str, text: str) -> list[tuple[int, str]]:
    """(line, SQL) of a page: fenced sql blocks, the SQL of each `orch query` in its sh blocks and in its inline
    code, inline code that is a query (`SELECT ...`, `WITH ...`, `FROM ...`), and the SQL a Python one-liner hands
    DuckDB (`.sql('...')`, `.execute('...')`)."""
    out = []
    for block in readme_examples.blocks(text, page):
        if block.source != page:  # included from another file: checked there
            continue
        if block.kind == "sql":
            out.append((block.line, block.text))
        elif block.kind == "sh":
            lines = block.text.splitlines()
            for command in readme_examples.commands(block):
                first = command.splitlines()[0].strip()
                line = block.line + 1 + next((i for i, x in enumerate(lines) if x.strip() == first), 0)
                out += [(line, sql) for sql in command_sql(command)]
    for line, span in readme_examples.code_spans(text):
        out += [(line, span)] if re.match(r"(SELECT|WITH|FROM)\b", span) else [(line, sql) for sql in command_sql(span)]
    return out


def command_sql(command: str) -> list[str]:
    try:
        words = readme_examples.words(command)
    except ValueError:  # not a command line
        return []
    if words[:2] in (["orch", "query"], [".venv/bin/orch", "query"]):
        return [w for w in words[2:] if not w.startswith("-") and re.search(r"(?i)\b(SELECT|FROM)\b", w)]
    if words[:2] == [".venv/bin/python", "-c"]:
        return [m.group(2) for m in re.finditer(r"\.(?:sql|execute)\((['\"])(.*?)\1", words[2])]
    return []


def test_the_sql_reading_finds_what_a_query_reads():
    """sql_names on the forms the docs write, and on those it must leave out."""
    assert sql_names("SELECT a FROM arm_summary a JOIN speedup_vs_baseline s USING (sweep_id, arm)") == [
        "arm_summary",
        "speedup_vs_baseline",
    ]
    assert sql_names("SELECT * FROM runs r, metrics m WHERE r.id = m.run_id") == ["runs", "metrics"]
    assert sql_names("SELECT arm FROM runs WHERE sweep_id = (SELECT max(id) FROM sweeps)") == ["runs", "sweeps"]
    assert sql_names("WITH last AS (SELECT * FROM main.sweeps) SELECT * FROM last") == ["sweeps"]
    assert sql_names("SELECT EXTRACT(epoch FROM started_at) FROM runs") == ["runs"]
    assert sql_names("SELECT * FROM read_csv('x.csv') JOIN information_schema.tables t ON true") == []
    assert sql_names("SELECT * FROM 'x.parquet' WHERE a IS NOT DISTINCT FROM b") == []
    assert sql_names("FROM arm_summary") == ["arm_summary"]


def test_every_table_a_pages_sql_reads_exists(schema):
    """The names after FROM and JOIN in every query the pages show, fenced or inline."""
    problems, found = [], 0
    for page, text in pages():
        for line, sql in sql_texts(page, text):
            for name in sql_names(sql):
                found += 1
                if name not in schema:
                    problems.append(f"{page} line {line}: the SQL reads `{name}`, no table or view of a results file")
    assert not problems, "\n".join(problems)
    assert found >= 10


# --- running text: "the `x` table", "the view `x`", the list in docs/sql.md --------------------------------------

NAMES = r"(?P<names>(?:`\w+`(?:,\s+|\s+and\s+|\s+or\s+))*`\w+`)"
NAMED = [
    re.compile(rf"(?i)\bthe {NAMES}\s+(?P<kind>tables?|views?)\b"),  # the `x` table, the `x` and `y` views
    re.compile(rf"(?i)\b(?P<kind>tables?|views?):?\s+{NAMES}"),
]  # the view `x`, tables `x`, `y` and `z`


def test_every_table_or_view_a_page_names_in_its_text_exists(schema):
    """ "the `x` table", "the `x` and `y` tables", "the view `x`", "views `x` and `y`": each x is a table or view of a
    results file (the page's text wraps anywhere, so a phrase may run over two lines)."""
    problems, found = [], 0
    for page, text in pages():
        running = readme_examples.prose(text)
        for m in (m for pattern in NAMED for m in pattern.finditer(running)):
            line = running.count("\n", 0, m.start()) + 1
            for name in re.findall(r"`(\w+)`", m["names"]):
                found += 1
                if name not in schema:
                    problems.append(
                        f"{page} line {line}: `{name}` ({' '.join(m.group(0).split())!r}): no table or "
                        "view of that name in a results file"
                    )
    assert not problems, "\n".join(problems)
    assert found >= 10


def sql_page_list() -> list[tuple[int, str, str]]:
    """docs/sql.md's list of the tables ("Tables: `builds`, ...") and views ("; views `measured_runs`, ..."): the
    names in backticks outside its parentheses, up to the sentence's end, as (line, name, "table" or "view")."""
    text = (ROOT / "docs" / "sql.md").read_text()
    start = text.index("Tables: ")
    out, depth, kind, i = [], 0, "table", start
    while i < len(text):
        ch = text[i]
        if ch == "[" and depth == 0 and re.match(r"\[[^\]]*\]\([^)]*\)", text[i:]):  # a link: skip it
            i += re.match(r"\[[^\]]*\]\([^)]*\)", text[i:]).end()
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "`":
            end = text.index("`", i + 1)
            if depth == 0:
                out.append((text.count("\n", 0, i) + 1, text[i + 1 : end], kind))
            i = end
        elif depth == 0 and text.startswith("views", i) and not text[i - 1].isalnum():
            kind = "view"
        elif depth == 0 and ch == "." and (i + 1 == len(text) or text[i + 1].isspace()):
            break
        i += 1
    return out


def test_every_table_and_view_the_sql_page_lists_exists_as_listed(schema):
    listed = sql_page_list()
    assert len(listed) >= 20 and {"table", "view"} == {kind for _, _, kind in listed}
    problems = []
    for line, name, kind in listed:
        if name not in schema:
            problems.append(
                f"docs/sql.md line {line}: `{name}` is listed as a {kind}: no table or view of that name "
                "in a results file"
            )
        elif schema[name] != kind:
            problems.append(f"docs/sql.md line {line}: `{name}` is listed as a {kind}; it is a {schema[name]}")
    assert not problems, "\n".join(problems)


# --- inline commands: `orch ...` and `make X` ------------------------------------------------------------------------


def inline(prefixes: tuple[str, ...]) -> list[tuple[str, int, str]]:
    """(page, line, span) of each inline code span that is a command line starting with one of the prefixes."""
    return [
        (page, line, span)
        for page, text in pages()
        for line, span in readme_examples.code_spans(text)
        if span.startswith(prefixes)
    ]


def test_every_orch_command_written_inline_names_real_commands_and_options():
    """`orch summary --wide`, `orch models get NAME`, `orch compare ... --fail-on regression`: each is a real
    command (or group) with options it takes and values they accept (the check of test_docs.py's fenced lines,
    readme_examples.check_orch, where a mention may leave out required arguments). `orch ...` names no command."""
    problems, checked = [], 0
    for page, line, span in inline(("orch ", ".venv/bin/orch ")):
        if readme_examples.words(span)[1:] == ["..."]:
            continue
        try:
            checked += readme_examples.check_orch(span, partial=True)
        except AssertionError as exc:
            problems.append(f"{page} line {line}: {exc}")
        except ValueError as exc:  # shlex: an open quote
            problems.append(f"{page} line {line}: {span!r}: {exc}")
    assert not problems, "\n".join(problems)
    assert checked >= 100


def test_every_make_command_written_inline_names_a_makefile_target():
    problems, found = [], inline(("make ",))
    for page, line, span in found:
        try:
            readme_examples.check_make(span)
        except AssertionError as exc:
            problems.append(f"{page} line {line}: `{span}`: {exc}")
    assert not problems, "\n".join(problems)
    assert len(found) >= 20
