"""The README is the front door: every command is in it with help text, and its exit codes are errors.py's."""

import re
from pathlib import Path

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
    defined = {c.exit_code for c in classes} | {2}  # 2: click's own usage errors
    assert documented == defined
    assert len({c.exit_code for c in classes}) == len(classes), "two error classes share an exit code"
