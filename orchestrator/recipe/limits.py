"""What a value may be before anything runs or is stored: every recipe variable, and every value a rendered argv
gives a flag whose range llama.cpp fixes (its C++ takes counts as 32-bit ints and probabilities in [0, 1]).

llama.cpp reads `--spec-draft-n-max -3` or `-c 99999999999999999999` without complaint (std::stoi wraps or
throws, by era) and the run fails or measures something else; a 20-digit integer stored as a variable broke every
later read of the results file. So a value is refused here, in one line naming the arm, the flag and the value,
before a sweep row exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.errors import RecipeError
from orchestrator.recipe import argv as flags

INT32_MAX = 2**31 - 1
INT64 = (-(2**63), 2**63 - 1)  # what a stored JSON number may be (DuckDB and orjson read 64-bit integers)


@dataclass(frozen=True)
class Kind:
    """A flag's value: a whole number in [low, high] (words: the few names some builds take instead), or with
    `real`, a finite number in [low, high]; `lists`: llama-bench's comma-separated lists, each element checked."""

    what: str
    low: float
    high: float
    real: bool = False
    words: tuple[str, ...] = ()
    lists: bool = False

    def problem(self, text: str) -> str | None:
        """Why text is not such a value; None when it is."""
        for part in text.split(",") if self.lists else (text,):
            if part.strip().lower() in self.words:
                continue
            try:
                number = float(part) if self.real else int(part)
            except (ValueError, OverflowError):
                return f"takes {self.what}"
            if not math.isfinite(number) or not self.low <= number <= self.high:
                return f"takes {self.what}"
        return None


COUNT = Kind(f"a count (a whole number from 0 to {INT32_MAX})", 0, INT32_MAX)
LAYERS = Kind(f"a layer count (0 to {INT32_MAX}, or auto or all)", 0, INT32_MAX, words=("auto", "all"))
THREADS = Kind(f"a thread count (-1 for the default, or 1 to {INT32_MAX})", -1, INT32_MAX)
PREDICT = Kind(
    f"a token count (-1: until the model stops, -2: until the context is full, or 0 to {INT32_MAX})", -2, INT32_MAX
)
KEEP = Kind(f"a token count (-1: all, or 0 to {INT32_MAX})", -1, INT32_MAX)
SEED = Kind("a seed (-1 for a random one, or 0 to 4294967295)", -1, 2**32 - 1)
PROBABILITY = Kind("a probability (a number from 0 to 1)", 0.0, 1.0, real=True)
REAL = Kind("a finite number", -math.inf, math.inf, real=True)
NON_NEGATIVE = Kind("a finite number of at least 0", 0.0, math.inf, real=True)
BENCH_COUNTS = Kind(f"counts (whole numbers from 0 to {INT32_MAX}, comma-separated)", 0, INT32_MAX, lists=True)

_ROLES: tuple[tuple[tuple[str, ...], Kind], ...] = (
    (flags.DRAFT_MAX + flags.DRAFT_MIN + flags.CTX + flags.CTX_DRAFT + flags.PARALLEL, COUNT),
    (
        (
            "-b",
            "--batch-size",
            "-ub",
            "--ubatch-size",
            "--top-k",
            "--spec-ngram-mod-n-match",
            "--spec-ngram-mod-n-min",
            "--spec-ngram-mod-n-max",
            "--spec-draft-block-size",
        ),
        COUNT,
    ),
    (
        tuple(
            f"--spec-ngram-{m}-{p}" for m in ("simple", "map-k", "map-k4v") for p in ("size-n", "size-m", "min-hits")
        ),
        COUNT,
    ),
    (flags.GPU_LAYERS + flags.GPU_LAYERS_DRAFT, LAYERS),
    (
        (
            "-t",
            "--threads",
            "-tb",
            "--threads-batch",
            "-td",
            "--threads-draft",
            "--spec-draft-threads",
            "-tbd",
            "--threads-batch-draft",
            "--spec-draft-threads-batch",
        ),
        THREADS,
    ),
    (("-n", "--n-predict", "--predict"), PREDICT),
    (("--keep",), KEEP),
    (("-s", "--seed"), SEED),
    (
        flags.DRAFT_P_MIN
        + flags.DRAFT_P_SPLIT
        + ("--top-p", "--min-p", "--typical", "--typical-p", "--xtc-probability"),
        PROBABILITY,
    ),
    (("--temp", "--temperature"), REAL),
    (("--repeat-penalty", "--presence-penalty", "--frequency-penalty", "--xtc-threshold"), NON_NEGATIVE),
)
FLAG_KINDS: dict[str, Kind] = {flag: kind for names, kind in _ROLES for flag in names}
# llama-bench reads -n/-p/-d as lists of counts (-p is the prompt elsewhere: only llama-bench's is checked)
BENCH_KINDS = {
    **FLAG_KINDS,
    "-n": BENCH_COUNTS,
    "--n-gen": BENCH_COUNTS,
    "-p": BENCH_COUNTS,
    "--n-prompt": BENCH_COUNTS,
    "-d": BENCH_COUNTS,
    "--n-depth": BENCH_COUNTS,
    "-t": Kind(f"thread counts (1 to {INT32_MAX}, comma-separated)", 1, INT32_MAX, lists=True),
}


def check_variable(key: str, value, source: str) -> None:
    """A variable's value as any later step may store it: no NaN or infinity, no integer beyond 64 bits (nested
    lists and dicts too)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise RecipeError(f"{source}: {key}={value!r} is not a finite number; give a number")
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        raise RecipeError(f"{source}: {key}={_short(str(value))} does not fit in 64 bits; give a smaller number")
    if isinstance(value, dict):
        for k, v in value.items():
            check_variable(f"{key}.{k}", v, source)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_variable(f"{key}[{i}]", v, source)


def check_argv(argv: list[str], literal: list[bool], params: dict, where: str) -> None:
    """Every value the recipe's variables gave a flag of known range (FLAG_KINDS) is in that range."""
    kinds = BENCH_KINDS if argv and argv[0].rsplit("/", 1)[-1] == "llama-bench" else FLAG_KINDS
    for i, token in enumerate(argv):
        flag, eq, value = token.partition("=")
        if eq and flag.startswith("-") and flag in kinds:
            pass  # --flag=value: the value is checked whoever wrote it
        elif i and not literal[i] and argv[i - 1] in kinds:
            flag, value = argv[i - 1], token
        else:
            continue
        if problem := kinds[flag].problem(value):
            named = [k for k, v in params.items() if not isinstance(v, bool) and str(v) == value]
            origin = f" (from {named[0]})" if len(named) == 1 else ""
            raise RecipeError(f"{where}: {flag} {problem}, not {_short(value)!r}{origin}; set it to one")


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]} ({len(text)} characters)"
