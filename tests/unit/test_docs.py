"""The README is the front door: every command is in it with help text, and its exit codes are errors.py's."""

import re
from pathlib import Path

import click
import readme_examples

from orchestrator import errors
from orchestrator.cli import main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def leaf_commands(group, prefix=()):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from leaf_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name), cmd


def test_every_command_has_help_and_appears_in_the_readme():
    commands = dict(leaf_commands(main))
    assert len(commands) >= 16
    for path, cmd in commands.items():
        assert cmd.help and "Example: orch " in cmd.help, f"orch {' '.join(path)} needs help text with an example"
        assert re.search(rf"\borch {' '.join(path)}\b", README), f"orch {' '.join(path)} is not in the README"


def test_the_readme_exit_code_table_lists_exactly_the_codes_orch_defines():
    section = README.split("## Errors", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.OrchError)
               and c is not errors.OrchError]
    defined = {c.exit_code for c in classes} | {2, 129, 143}  # click's usage errors; SIGHUP and SIGTERM (130: Ctrl-C)
    assert documented == defined
    assert len({c.exit_code for c in classes}) == len(classes), "two error classes share an exit code"


# --- every README example is checked: parsed here, run in tests/integration/test_readme.py -------------------------

def test_every_readme_block_has_a_kind_the_docs_tests_check():
    found = readme_examples.blocks()
    assert len(found) >= 12
    for block in found:
        assert block.kind in readme_examples.KINDS, f"README line {block.line}: a block needs a kind " \
            f"({', '.join(readme_examples.KINDS)}) so that a docs test checks it"


def sh_commands() -> list[str]:
    return [c for b in readme_examples.blocks() if b.kind == "sh" for c in readme_examples.commands(b)]


def test_every_orch_command_line_in_the_readme_parses():
    """Each orch line, with its optional parts and without, each choice of A|B, is accepted by orch's own parser:
    the commands, options, choices and value types the README shows exist."""
    checked = 0
    for command in sh_commands():
        words = readme_examples.words(command)
        if words[0] not in ("orch", ".venv/bin/orch"):
            continue
        for args in readme_examples.variants(command):
            cmd, path = main, []
            args = args[1:]
            while isinstance(cmd, click.Group):
                assert args and args[0] in cmd.commands, f"{command!r}: no command {' '.join(path + args[:1])}"
                path.append(args[0])
                cmd = cmd.commands[args.pop(0)]
            try:
                cmd.make_context(f"orch {' '.join(path)}", list(args))
            except click.ClickException as exc:
                raise AssertionError(f"README: {command!r} as {args}: {exc.format_message()}") from None
            checked += 1
    assert checked >= 40


def test_every_make_line_names_a_target_and_variables_the_makefile_has():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    lines = [c for c in sh_commands() if c.startswith("make ")]
    assert lines
    for command in lines:
        target, *assignments = [w.strip("[]") for w in readme_examples.words(command)[1:]]
        assert re.search(rf"^{target}:", makefile, re.M), f"README: make {target}: no such target"
        for name in (a.split("=")[0] for a in assignments):
            assert f"$({name})" in makefile, f"README: make {target} {name}=...: the Makefile never reads {name}"


def test_the_readme_toml_is_toml():
    import tomllib

    (block,) = [b for b in readme_examples.blocks() if b.kind == "toml"]
    assert set(tomllib.loads(block.text)) == {"target", "draft"}  # run as --vars by test_readme.py


def test_the_readme_layout_is_the_source_tree():
    root = Path(__file__).resolve().parents[2] / "orchestrator"
    (block,) = [b for b in readme_examples.blocks() if b.kind == "tree"]
    packages = re.findall(r"^  (\w+)/", block.text, re.M)
    assert sorted(packages) == sorted(p.name for p in root.iterdir() if (p / "__init__.py").exists())
    files = re.findall(r"\b(\w+\.py)\b", block.text)
    assert files and all(list(root.rglob(f)) for f in files), files
