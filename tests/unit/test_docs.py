"""The README is the front door and docs/ the rest: every command is in them with help text, the exit-code table is
errors.py's, every example parses, and the README's copy of make demo's output is the one getting-started includes."""

import re
from dataclasses import replace
from pathlib import Path

import readme_examples

from orchestrator import errors
from orchestrator.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = "\n".join(page.read_text() for page in readme_examples.pages())


def leaf_commands(group, prefix=()):
    for name in group.list_commands(None):  # loaded as asked for (group.COMMANDS)
        cmd = group.get_command(None, name)
        if hasattr(cmd, "commands"):
            yield from leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def test_every_command_has_help_and_appears_in_the_docs():
    commands = dict(leaf_commands(main))
    assert len(commands) >= 16
    for path, cmd in commands.items():
        assert cmd.help and "Example: orch " in cmd.help, f"orch {' '.join(path)} needs help text with an example"
        assert re.search(rf"\borch {' '.join(path)}\b", DOCS), f"orch {' '.join(path)} is in no docs page"


def test_the_readme_is_a_front_door_of_about_two_hundred_lines_linking_the_docs():
    assert len(README.splitlines()) <= 200
    for link in re.findall(r"\]\((docs/[\w.-]+\.md)", README):
        assert (ROOT / link).exists(), link
    assert "make docs" in README and "make demo" in README and "make test" in README


def test_getting_started_includes_the_readmes_demo_output():
    """The README holds make demo's table, once, between section markers GitHub does not show; getting-started
    includes that section (pymdownx.snippets) rather than a copy, then shows its tune, make demo-gemma's and
    make demo-tiny's."""
    text = (ROOT / "docs" / "getting-started.md").read_text()
    assert readme_examples.includes(text, "docs/getting-started.md")[0][1:] == ("README.md", "demo-output")
    (readme,) = [b for b in readme_examples.blocks() if b.kind == "output"]
    first, section = readme_examples.section("README.md", "demo-output")
    assert readme_examples.blocks(section) == [replace(readme, line=readme.line - first + 1)]  # the block alone
    assert readme.text not in text  # no copy
    page = readme_examples.blocks(text, "docs/getting-started.md")
    shown = [b for b in page if b.kind == "output"]
    assert shown[0] == readme and all(b.source == "docs/getting-started.md" for b in shown[1:])
    shown = [b.text for b in shown]
    assert "real_pair.j2" in shown[0] and "candidate" in shown[1].split("\n")[1]  # the pair's sweeps, then its tune
    assert ["real_demo.j2" in shown[2], "recipe_a.j2" in shown[3]] == [True] * 2


def test_the_built_getting_started_page_shows_the_readmes_demo_output():
    """The page as the site renders it (mkdocs.yml's Markdown extensions and their settings) shows the README's
    table as a code block, and no include line is left over."""
    import html

    import markdown
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    assert "pymdownx.snippets" in config.markdown_extensions
    assert config.mdx_configs["pymdownx.snippets"]["check_paths"] is True  # a missing file or section fails the build
    md = markdown.Markdown(extensions=config.markdown_extensions, extension_configs=config.mdx_configs)
    page = md.convert((ROOT / "docs" / "getting-started.md").read_text())
    codes = [
        html.unescape(re.sub(r"<[^>]+>", "", code)).strip()
        for code in re.findall(r"<code[^>]*>(.*?)</code>", page, re.S)
    ]
    (readme,) = [b.text for b in readme_examples.blocks() if b.kind == "output"]
    assert readme.strip() in codes
    assert "8&lt;" not in page and "8<-" not in page


def test_every_docs_page_is_in_the_sites_navigation():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    assert sorted(re.findall(r": ([\w-]+\.md)$", nav, re.M)) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_the_exit_code_table_lists_exactly_the_codes_orch_defines():
    section = (ROOT / "docs" / "errors.md").read_text()
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.OrchError) and c is not errors.OrchError
    ]
    defined = {c.exit_code for c in classes} | {2, 129, 143}  # click's usage errors; SIGHUP and SIGTERM (130: Ctrl-C)
    assert documented == defined
    assert len({c.exit_code for c in classes}) == len(classes), "two error classes share an exit code"


# --- every README example is checked: parsed here, run in tests/integration/test_readme.py -------------------------


def test_every_docs_block_has_a_kind_the_docs_tests_check():
    found = readme_examples.all_blocks()
    assert len(found) >= 12
    for block in found:
        assert block.kind in readme_examples.KINDS, (
            f"{block.source} line {block.line}: a block needs a kind "
            f"({', '.join(readme_examples.KINDS)}) so that a docs test checks it"
        )


def sh_commands() -> list[str]:
    return [c for b in readme_examples.all_blocks() if b.kind == "sh" for c in readme_examples.commands(b)]


def test_every_orch_command_line_in_the_docs_parses():
    """Each orch line, with its optional parts and without, each choice of A|B, is accepted by orch's own parser:
    the commands, options, choices and value types the README shows exist (readme_examples.check_orch;
    test_docs_names.py checks the orch commands written inline in running text with it too)."""
    checked = 0
    for block in [b for b in readme_examples.all_blocks() if b.kind == "sh"]:
        for command in readme_examples.commands(block):
            if readme_examples.words(command)[0] in ("orch", ".venv/bin/orch"):
                try:
                    checked += readme_examples.check_orch(command)
                except AssertionError as exc:
                    raise AssertionError(f"{block.source}, the block at line {block.line}: {exc}") from None
    assert checked >= 40


def test_every_make_line_names_a_target_and_variables_the_makefile_has():
    lines = [c for c in sh_commands() if c.startswith("make ")]
    assert lines
    for command in lines:
        readme_examples.check_make(command)


def test_the_docs_toml_is_toml_and_a_space_is_a_space_tune_reads(tmp_path):
    import tomllib

    from orchestrator.tune import space

    blocks = [b for b in readme_examples.all_blocks() if b.kind == "toml"]
    (vars_block,) = [b for b in blocks if "# mine.toml:" in b.text]
    assert set(tomllib.loads(vars_block.text)) == {"target", "draft"}  # run as --vars by test_readme.py
    spaces = [b for b in blocks if "[[grid]]" in b.text]
    assert spaces and len(blocks) == len(spaces) + 1
    for block in spaces:
        path = tmp_path / "space.toml"
        path.write_text(block.text)
        assert space.from_file(path, {"spec": "none"}).grids


def test_the_docs_layout_is_the_source_tree():
    root = Path(__file__).resolve().parents[2] / "orchestrator"
    (block,) = [b for b in readme_examples.all_blocks() if b.kind == "tree"]
    packages = re.findall(r"^  (\w+)/", block.text, re.M)
    assert sorted(packages) == sorted(p.name for p in root.iterdir() if (p / "__init__.py").exists())
    files = re.findall(r"\b(\w+\.py)\b", block.text)
    assert files and all(list(root.rglob(f)) for f in files), files


def test_the_cli_reference_shows_real_defaults_not_clicks_sentinel(monkeypatch):
    """click 8.3+ marks an option without a default with a sentinel that mkdocs-click printed as `Sentinel.UNSET` (63
    times): docs_hooks gives a flag False and any other option None, --help included, when the site is built."""
    import click
    from mkdocs_click._docs import make_command_docs

    import docs_hooks
    from orchestrator.cli import main

    monkeypatch.setattr(click.Command, "get_help_option", click.Command.get_help_option)  # restored after
    every = [p for c in docs_hooks._commands(main) for p in c.params]
    for param in every:
        monkeypatch.setattr(param, "default", param.default)
    docs_hooks.on_config({})
    text = "\n".join(make_command_docs("orch", main, depth=1, style="table", list_subcommands=True))
    assert "Sentinel" not in text and "UNSET" not in text
    assert "| `--json` | boolean | " in text and "| `False` |" in text
