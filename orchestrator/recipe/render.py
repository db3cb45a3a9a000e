"""A recipe body rendered to one argv, in Jinja2's immutable sandbox, with nothing a value can make unbounded.

Every `{{ expression }}` becomes a placeholder before the text is split on whitespace, so a value with spaces,
quotes or `;` lands in exactly one argv element and no shell ever sees it. An expression must render a value: a
none would leave the flag before it without one (`--seed {{ none }} --x` made `--x` the seed), a boolean is no
argument llama.cpp takes (`True`). Repetition (`'x' * n`, `[..] * n`, `**`) and a %-format's width or precision
(`'%0999999999d' % 1`, the `format` filter) are checked before they are computed, and
the rendered text is capped as it is generated: a recipe cannot make orch build a gigabyte before any flag check,
and a render stops after RENDER_LIMIT_S (loops within loops that print nothing).
"""

from __future__ import annotations

import contextlib
import operator
import re
import signal
import threading

import jinja2
import jinja2.sandbox

from orchestrator.errors import RecipeError
from orchestrator.recipe import depth, modelref

PLACEHOLDER = "\x00{}\x00"
PLACEHOLDER_RE = re.compile(r"\x00(\d+)\x00")
FLAG_HEAD_RE = re.compile(r"--?[\w-]+=")  # `--model=` in `--model={{ models }}/{{ target }}`
MAX_RENDERED = 1 << 20  # characters of a rendered command line, its values included (a long prompt is a file)
RENDER_LIMIT_S = 5.0  # one arm's command line renders in milliseconds; a recipe that takes seconds loops in loops
MAX_POWER_BITS = 1 << 16  # a result of ** above this many bits is no count a flag takes
# a %-format's field: "%%" (a percent sign), or its width and precision, each a number or * (taken from the args)
PERCENT_FIELD_RE = re.compile(r"%%|%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")


class _Refused(Exception):
    """A bound the render hit; its message is the user's line (after the recipe's path)."""


def _checked_percent(text, args):
    """text % args, refused where a field's width or precision alone would outgrow a command line."""
    if isinstance(text, str):
        for field in PERCENT_FIELD_RE.finditer(text):
            width, precision = field.groups()
            if "*" in (width, precision):
                raise _Refused("a %-format field takes its width from the values (*): write the width in the format")
            if max(int(width or 0), int(precision or 0)) > MAX_RENDERED:
                raise _Refused(
                    f"a %-format field {max(int(width or 0), int(precision or 0)):,} wide is above the "
                    f"{MAX_RENDERED:,} characters a command line may hold"
                )
    return operator.mod(text, args)


class _Sandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**", "%"])

    def call_binop(self, context, op: str, left, right):
        if op == "%":
            return _checked_percent(left, right)
        if op == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_RENDERED:
                    raise _Refused(
                        f"a repetition makes {len(seq) * n:,} items, above the {MAX_RENDERED:,} a command line may hold"
                    )
            return operator.mul(left, right)
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and right > 0
            and max(abs(left), 2).bit_length() * right > MAX_POWER_BITS
        ):
            raise _Refused(f"{left} ** {right} is a number of more than {MAX_POWER_BITS:,} bits; no flag takes it")
        return super().call_binop(context, op, left, right)


def environment(values: list[str]) -> jinja2.Environment:
    held = [0]  # characters in values so far: a running sum (a render of many values stays linear)

    @jinja2.pass_eval_context
    def hold(eval_ctx, value):
        # Every {{ expression }} becomes a placeholder; values never meet the whitespace split. Taking the
        # evaluation context keeps Jinja from calling this at compile time for a constant (`{{ 4096 }}`): a
        # placeholder made then would name an index of the compile-time list, another value at render time.
        if value is None or isinstance(value, bool):
            raise _Refused(
                f"an expression renders {'none' if value is None else str(value).lower()}, which is no "
                "argument: "
                + (
                    "guard its flag with {% if x is not none %}--flag {{ x }}{% endif %} or give the variable a value"
                    if value is None
                    else "write {% if x %}--flag{% endif %} for a switch"
                )
            )
        if not values:  # render_argv cleared them: a new render
            held[0] = 0
        values.append(str(value))
        held[0] += len(values[-1])
        if held[0] > MAX_RENDERED:
            raise _Refused(
                f"the rendered values exceed {MAX_RENDERED:,} characters; a long prompt belongs in a prompt file"
            )
        return PLACEHOLDER.format(len(values) - 1)

    env = _Sandbox(undefined=jinja2.StrictUndefined, autoescape=False, finalize=hold)
    env.filters["format"] = lambda text, *args, **kwargs: _checked_percent(str(text), kwargs or args)
    env.globals["depth_prompt"] = depth.prompt_file  # `-f {{ depth_prompt(8192) }}`: 8K of context filled
    return env


def compile_template(env: jinja2.Environment, source: str, path) -> jinja2.Template:
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise RecipeError(f"{path}:{exc.lineno}: {exc.message}") from None


def render_argv(template: jinja2.Template, values: list[str], context: dict, path: str) -> tuple[list[str], list[bool]]:
    """Render with `values` (the list the environment's finalize appends to) and split into argv."""
    values.clear()
    try:
        with _time_limit(RENDER_LIMIT_S):
            text = _bounded(template.generate(context))
    except _Refused as exc:
        raise RecipeError(f"{path}: {exc}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise RecipeError(
            f"{path}: unsafe recipe, refused: {str(exc.message).rstrip('.')}; a recipe may use its "
            f"variables, filters and tests, never Python internals"
        ) from None
    except jinja2.UndefinedError as exc:
        known = ", ".join(sorted(k for k in context if k != "meta"))
        raise RecipeError(f"{path}: {exc.message}; known variables: {known}") from None
    except Exception as exc:  # noqa: BLE001  (1/0, an include without a loader, a too-long range: a bad recipe)
        raise RecipeError(f"{path}: cannot render: {type(exc).__name__}: {exc}") from None
    argv, literal = [], []
    for token in text.split():
        whole = PLACEHOLDER_RE.fullmatch(token)
        if whole and values[int(whole.group(1))] == "":
            continue  # an empty value adds no argument
        token = _standing_alone(token, values)
        argv.append(PLACEHOLDER_RE.sub(lambda m: values[int(m.group(1))], token))
        literal.append(not PLACEHOLDER_RE.search(token))
    if not argv:
        raise RecipeError(f"{path}: the recipe renders to an empty command line")
    return argv, literal


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Stop a render that runs past `seconds` (loops within loops that print nothing: no output cap sees them) with
    _Refused, from an interval timer; where it cannot be set (a thread other than the main one), no limit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise _Refused(f"rendering took more than {seconds:g} s (loops within loops?): a recipe renders at once")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _bounded(chunks) -> str:
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_RENDERED:
            raise _Refused(f"the recipe renders more than {MAX_RENDERED:,} characters of command line")
        out.append(chunk)
    return "".join(out)


def _standing_alone(token: str, values: list[str]) -> str:
    """`{{ models }}/{{ target }}` where target is an absolute or ~ path or a Hugging Face reference is that value
    alone, as os.path.join drops what comes before an absolute component: so `--set target=/data/x.gguf` works in
    every recipe that joins a name onto the models directory. Only values and slashes are dropped, never recipe
    text; a `--flag=` head stays."""
    head = FLAG_HEAD_RE.match(token)
    start = head.end() if head else 0
    for m in reversed(list(PLACEHOLDER_RE.finditer(token, start))):
        before = token[start : m.start()]
        if (
            before.endswith("/")
            and not PLACEHOLDER_RE.sub("", before).strip("/")
            and modelref.stands_alone(values[int(m.group(1))])
        ):
            return token[:start] + token[m.start() :]
    return token
