"""The one table of llama.cpp flag names orch knows, and reading a flag's value out of an argv.

Each role lists every spelling it has had across eras, the newest first where the dialect layer picks
one: `dialect` translates between them, `preflight` finds the models, `memfit` reads sizes and cache
types, `plan` refuses --host/--port in server recipes (orch binds the server itself). A new spelling goes here
and nowhere else.
"""

from __future__ import annotations

import shlex

TARGET_MODEL = ("-m", "--model")
DRAFT_MODEL = ("-md", "--model-draft", "--spec-draft-model")
SPEC_TYPE = ("--spec-type",)
DRAFT_MAX = ("--spec-draft-n-max", "--draft-max", "--draft", "--draft-n")
DRAFT_MIN = ("--spec-draft-n-min", "--draft-min", "--draft-n-min")
DRAFT_P_MIN = ("--spec-draft-p-min", "--draft-p-min")
DRAFT_P_SPLIT = ("--spec-draft-p-split", "--draft-p-split")
CTX = ("-c", "--ctx-size")
CTX_DRAFT = ("-cd", "--ctx-size-draft")  # removed in 2026-04 with no successor: the draft takes the target's
GPU_LAYERS = ("-ngl", "--gpu-layers", "--n-gpu-layers")
GPU_LAYERS_DRAFT = ("-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "--spec-draft-ngl")
CACHE_TYPE_K = ("-ctk", "--cache-type-k")
CACHE_TYPE_V = ("-ctv", "--cache-type-v")
CACHE_TYPE_K_DRAFT = ("-ctkd", "--cache-type-k-draft", "--spec-draft-type-k")
CACHE_TYPE_V_DRAFT = ("-ctvd", "--cache-type-v-draft", "--spec-draft-type-v")
DEVICE_DRAFT = ("-devd", "--device-draft", "--spec-draft-device")
PARALLEL = ("-np", "--parallel")
ADDRESS = ("--host", "--port")  # orch binds llama-server itself: 127.0.0.1 on a free port
METRICS = ("--metrics",)
VERBOSITY = ("-lv", "--verbosity", "--log-verbosity", "-v", "--verbose", "--log-verbose")
FLASH_ATTN = ("-fa", "--flash-attn")
N_PREDICT = ("-n", "--n-predict", "--predict")
PROMPT = ("-p", "--prompt")
PROMPT_FILE = ("-f", "--file")
THREADS = ("-t", "--threads")
THREADS_DRAFT = ("-td", "--threads-draft", "--spec-draft-threads")
THREADS_BATCH = ("-tb", "--threads-batch")
THREADS_BATCH_DRAFT = ("-tbd", "--threads-batch-draft", "--spec-draft-threads-batch")

# Roles whose spelling changed between eras: the dialect layer gives each build the first one it accepts.
RENAMED = (
    DRAFT_MAX,
    DRAFT_MIN,
    DRAFT_P_MIN,
    DRAFT_P_SPLIT,
    DRAFT_MODEL,
    GPU_LAYERS_DRAFT,
    CACHE_TYPE_K_DRAFT,
    CACHE_TYPE_V_DRAFT,
    DEVICE_DRAFT,
)


def flag_value(argv: list[str], flags: tuple[str, ...]) -> str | None:
    """Value of the last of flags in argv (`-m X` or `--model=X`)."""
    return flag_values(argv, [flags])[0]


def flag_values(argv: list[str], roles: list[tuple[str, ...]]) -> list[str | None]:
    """flag_value of each role (a tuple of a flag's spellings), in one read of argv."""
    where: dict[str, list[int]] = {}
    for index, flags in enumerate(roles):
        for flag in flags:
            where.setdefault(flag, []).append(index)
    found: list[str | None] = [None] * len(roles)
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if eq and name in where:
            hit, got = where[name], value
        elif arg in where and i + 1 < len(argv):
            hit, got = where[arg], argv[i + 1]
        else:
            continue
        for index in hit:
            found[index] = got
    return found


def flags_in(argv: list[str]) -> set[str]:
    """The flag names an argv uses, `--name=value` counted as `--name`."""
    return {a.split("=", 1)[0] for a in argv if a.startswith("-")}


def with_values(argv: list[str], flags: tuple[str, ...], change) -> list[str]:
    """argv with every value of flags (`-m X` or `--model=X`) replaced by change(value)."""
    out = list(argv)
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if eq and name in flags:
            out[i] = f"{name}={change(value)}"
        elif arg in flags and i + 1 < len(argv):
            out[i + 1] = change(argv[i + 1])
    return out


def command_line(argv: list[str]) -> str:
    """The executed argv as one line to paste into a shell (quoted; orch itself never runs a shell string)."""
    return shlex.join(_without_verbosity(argv))


def _without_verbosity(argv: list[str]) -> list[str]:
    """orch adds -lv to read the statistics; a user's command does not need it."""
    out, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        if arg in VERBOSITY[:3]:
            skip = 1
            continue
        out.append(arg)
    return out
