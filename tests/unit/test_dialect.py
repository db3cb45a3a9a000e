"""Flag dialects of two real builds, from their captured --help (tests/fixtures/help/<commit>/)."""

from pathlib import Path

import pytest

from orchestrator.errors import DialectError
from orchestrator.recipe import dialect

HELP = Path(__file__).resolve().parents[1] / "fixtures" / "help"
NEW, OLD = "0c1e57098", "f49e91787"
OLDEST = "7841fc723"  # llama-cpp-python 0.3.8 (spring 2025): `-fa` a bare switch, `llama-cli` the completion tool


def helps(commit):
    return {p.name.removesuffix(".help.txt"): p.read_text() for p in (HELP / commit).glob("*.help.txt")}


def recipe_a_argv(tool="llama-speculative-simple"):
    argv = [
        f"/b/bin/{tool}",
        "-m",
        "t.gguf",
        "-md",
        "d.gguf",
        "-ngl",
        "99",
        "-ngld",
        "99",
        "-fa",
        "on",
        "-c",
        "4096",
        "--draft-max",
        "16",
        "--draft-min",
        "5",
        "--draft-p-min",
        "0.9",
        "-p",
        "hi",
    ]
    literal = [False] + [not (i % 2 == 0) for i in range(1, len(argv))]  # flags at odd places, values after
    return argv, literal


def test_help_parsing_separates_accepted_and_removed_flags():
    new = dialect.parse_help(helps(NEW)["llama-speculative-simple"])
    assert {"--spec-draft-n-max", "-md", "-lv", "--draft-p-min", "-fa"} <= new.accepted
    assert {"--draft-max", "--draft-min"} <= new.removed and "--draft-max" not in new.accepted
    assert "draft-simple" in new.spec_types and new.has_trace_level
    old = dialect.parse_help(helps(OLD)["llama-speculative-simple"])
    assert {"--draft-max", "--draft-min", "--draft-p-min", "-md"} <= old.accepted
    assert "--spec-draft-n-max" not in old.accepted and not old.has_trace_level


def test_one_recipe_two_dialects():
    argv, literal = recipe_a_argv()
    new = dialect.translate(argv, literal, helps(NEW), "0c1e57098-cpu")
    assert new.argv[new.argv.index("--spec-draft-n-max") + 1] == "16"
    assert new.argv[new.argv.index("--spec-draft-n-min") + 1] == "5"
    assert new.argv[-4:] == ["--spec-type", "draft-simple", "-lv", "4"]
    assert len(new.notes) == 4 and any("--draft-max -> --spec-draft-n-max" in n for n in new.notes)
    old = dialect.translate(argv, literal, helps(OLD), "f49e91787-cpu")
    assert old.argv == argv and old.notes == []  # the recipe is already in this build's spelling
    # Written the new way, it goes back to the old spelling.
    modern = [a.replace("--draft-max", "--spec-draft-n-max").replace("--draft-min", "--spec-draft-n-min") for a in argv]
    back = dialect.translate(modern, literal, helps(OLD), "f49e91787-cpu")
    assert back.argv == argv


def test_spec_type_already_given_is_left_alone_and_tree_variant_gets_none():
    argv, literal = recipe_a_argv()
    out = dialect.translate(argv + ["--spec-type", "draft-simple"], literal + [True, False], helps(NEW), "n")
    assert out.argv.count("--spec-type") == 1
    tree = dialect.translate(*recipe_a_argv("llama-speculative"), helps(NEW), "n")
    assert "--spec-type" not in tree.argv


def test_classic_completion_tool_per_build():
    argv, literal = ["/b/bin/llama-cli", "-m", "t.gguf", "-n", "8"], [False, True, False, True, False]
    new = dialect.translate(argv, literal, helps(NEW), "0c1e57098-cpu")
    assert new.argv[0] == "/b/bin/llama-completion" and "llama-cli -> llama-completion" in new.notes[0]
    old = dialect.translate(["/b/bin/llama-completion", *argv[1:]], literal, helps(OLD), "f49e91787-cpu")
    assert Path(old.argv[0]).name in helps(OLD)


def test_unknown_and_removed_flags_stop_the_arm_with_closest_matches():
    with pytest.raises(DialectError) as exc:
        dialect.translate(
            ["/b/bin/llama-completion", "--tempp", "0"], [False, True, False], helps(NEW), "0c1e57098-cpu"
        )
    assert str(exc.value) == (
        "flag --tempp is not accepted by llama-completion of build 0c1e57098-cpu; "
        "closest flags it has: --temp, --top-p, --dynatemp-exp"
    )
    with pytest.raises(DialectError, match="flag -cd is not accepted"):
        dialect.translate(["/b/bin/llama-speculative-simple", "-cd", "512"], [False, True, False], helps(NEW), "n")


def test_values_are_not_checked_as_flags_and_translation_can_be_disabled():
    argv, literal = ["/b/bin/llama-completion", "-p", "--not-a-flag"], [False, True, False]
    assert dialect.translate(argv, literal, helps(NEW), "n").argv[:3] == argv
    off = dialect.translate(
        ["/b/bin/llama-speculative-simple", "--draft-max", "8"], [False, True, False], helps(NEW), "n", enabled=False
    )
    assert off.argv == ["/b/bin/llama-speculative-simple", "--draft-max", "8"]


def test_programs_outside_the_build_are_run_as_written():
    out = dialect.translate(["/usr/bin/python3", "-c", "pass"], [False, True, False], helps(NEW), "n")
    assert out.argv == ["/usr/bin/python3", "-c", "pass"] and out.notes == []


def test_spec_type_values_are_checked_against_the_build():
    argv = ["/b/bin/llama-server", "-m", "t.gguf", "--spec-type", "draft-simple"]
    literal = [False, True, False, True, False]
    assert dialect.translate(argv, literal, helps(NEW), "0c1e57098-cpu").argv[:5] == argv
    with pytest.raises(DialectError, match="spec type draft-simple is not offered by llama-server of build f49e91787"):
        dialect.translate(argv, literal, helps(OLD), "f49e91787-cpu")
    ngram = argv[:4] + ["ngram-mod"]
    assert dialect.translate(ngram, literal, helps(OLD), "f49e91787-cpu").argv == ngram


def test_spec_methods_per_tool_from_the_help():
    new, old = dialect.spec_methods(helps(NEW)), dialect.spec_methods(helps(OLD))
    assert {"draft-mtp", "draft-eagle3", "draft-dflash", "draft-dspark", "draft-simple", "ngram-mod"} <= set(
        new["llama-speculative-simple"]
    ) and "none" not in new["llama-server"]
    # No --spec-type in the old llama-speculative-simple: a draft model is its one method.
    assert old["llama-speculative-simple"] == ["draft-simple"]
    assert old["llama-server"][0] == "draft-simple" and "draft-mtp" not in old["llama-server"]
    assert "llama-completion" not in old and "llama-bench" not in new


def test_flash_attention_value_becomes_the_switch_of_a_build_without_values():
    argv, literal = recipe_a_argv()
    assert "-fa" in dialect.parse_help(helps(OLDEST)["llama-speculative-simple"]).switches
    assert "-fa" not in dialect.parse_help(helps(NEW)["llama-speculative-simple"]).switches
    oldest = dialect.translate(argv, literal, helps(OLDEST), "7841fc723-cpu")
    assert "-fa" in oldest.argv and "on" not in oldest.argv and "--draft-max" in oldest.argv
    assert any("-fa on -> -fa" in n for n in oldest.notes)
    at = argv.index("-fa")
    off = argv[: at + 1] + ["off"] + argv[at + 2 :]
    dropped = dialect.translate(off, literal, helps(OLDEST), "7841fc723-cpu")
    assert "-fa" not in dropped.argv and "off" not in dropped.argv
    assert dropped.argv == argv[:at] + argv[at + 2 :]
    kept = dialect.translate(argv, literal, helps(NEW), "0c1e57098-cpu")  # a build whose -fa takes a value
    assert kept.argv[kept.argv.index("-fa") + 1] == "on"
    server = dialect.translate(
        ["/b/bin/llama-server", "-m", "t.gguf", "-fa", "on"],
        [False, True, False, True, True],
        helps(OLDEST),
        "7841fc723-cpu",
    )
    assert server.argv == ["/b/bin/llama-server", "-m", "t.gguf", "-fa"]
