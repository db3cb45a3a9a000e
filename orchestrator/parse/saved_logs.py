"""Saved logs read the way orch reads a stored run: which file is the log, what kind of log it is, its metrics and
the failure class a stored run with that log would get, decided by content alone (file names say nothing).

    reading = read_logs([LogFile("run-5.stderr.log", data), LogFile("run-5.stdout.log", data2)])
    reading.kind, reading.parsed.metrics, reading.failure_class

The files given together are one run's streams. The log is the file with the most llama.cpp log lines; the
others are the run's output (echoed prompt and generated text), never read for figures, as in a stored run,
where figures come from stderr only: a prompt that carries metric lines forges nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orchestrator.errors import NothingRecognised, ParseError

from . import METRIC_KEYS, ParsedLog, check_ranges, parse_run
from .bench import parse_bench
from .failure import CRASH_RE, decide_failure, match_signature
from .lines import clean_lines, strip_prefixes
from .modes import parse_bench_run
from .server import server_metrics
from .server_failure import saved_log_failure
from .server_log import ServerLog, read_server_log
from .version import parse_version

KINDS = {
    "speculative": "llama-speculative / llama-speculative-simple run (its end block: decoded, n_drafted, accept)",
    "completion": "completion-tool run (llama-completion, llama-cli before the chat UI, llama-simple: the perf block)",
    "chat-cli": "chat llama-cli run (its [ Prompt | Generation ] speed line)",
    "server": "llama-server log (per-request timings and draft acceptance lines, pooled like a server run)",
    "bench": "llama-bench machine output (-o jsonl or -o json: one test, read as a bench-mode run)",
    "failed-run": "failed run (an error llama.cpp printed, or a log that stops before any figure)",
}
READABLE = (
    "orch parse reads llama-speculative(-simple), llama-completion, llama-cli, llama-simple and "
    "llama-server logs of every era (stderr, stdout or both), llama-bench JSON output and failed runs' logs"
)
# A llama.cpp log line: a timestamp/level prefix, a server tag, or a C function name before the message.
LOG_LINE_RE = re.compile(
    r"^(?:\d+\.\d{2}\.\d{3}\.\d{3} [IWED] |(?:srv|slot|spec|cmn|que)\s+\S{1,12}: "
    r"|[a-z_][a-z0-9_]*(?:\(\))?: )"
)
# Lines only llama.cpp's start-up prints: a log cut off after them is a run that never got to its figures.
START_RE = re.compile(
    r"^(?:llama_\w+|common_\w+|load_tensors|print_info|gguf_\w+|ggml_\w+|sched_reserve"
    r"|system_info|llama_completion): "
)
# The chat llama-cli's stdout: its banner and speed line (its stderr carries next to nothing).
CHAT_RE = re.compile(
    r"^\[ Prompt: .* t/s \| Generation: .* t/s \]$|^build\s+: b\d+-[0-9a-f]+$"
    r"|^available commands:$",
    re.M,
)
BINARY_SHARE = 0.3  # share of undecodable bytes above which a file is data, not text


@dataclass(frozen=True)
class LogFile:
    name: str
    data: bytes


@dataclass
class FileRole:
    name: str
    role: str  # "log", "output" or "empty"
    why: str


@dataclass
class LogReading:
    kind: str  # a key of KINDS
    parsed: ParsedLog
    failure_class: str | None
    failure_detail: str | None
    files: list[FileRole]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "kind_description": KINDS[self.kind],
            "failure_class": self.failure_class,
            "failure_detail": self.failure_detail,
            "files": [{"path": f.name, "role": f.role, "why": f.why} for f in self.files],
            "notes": self.notes,
            **self.parsed.to_dict(),
        }

    def lines(self) -> list[str]:
        out = [f"kind: {self.kind}: {KINDS[self.kind]}"]
        out += [f"file: {f.name}: {f.role} ({f.why})" for f in self.files]
        out.append(f"failure: {self.failure_class} ({self.failure_detail})" if self.failure_class else "failure: none")
        out += [f"note: {n}" for n in self.notes]
        metrics = self.parsed.metrics
        out += [f"{key:>20}: {value}" for key, value in metrics.items() if value is not None]
        if absent := [key for key, value in metrics.items() if value is None]:
            out.append(f"not in the log: {', '.join(absent)}")
        if self.parsed.version:
            out.append(f"{'version':>20}: {self.parsed.version}")
        return out


def detect_kind(text: str) -> str | None:
    """The kind of a run's log text (the stderr, or a whole server log); None when nothing is recognised.

    Pure and total: any text, however damaged, gives a kind or None, never an exception.
    """
    if read_server_log(text).is_server:
        return "server"
    parsed = parse_run("", text)
    if parsed.has_end_block:
        return "speculative"
    if "target" in parsed.perf:
        return "completion"
    if parsed.metrics["decode_tps"] is not None or CHAT_RE.search(text):
        return "chat-cli"
    if match_signature(text) or CRASH_RE.search(text) or _start_lines(text):
        return "failed-run"
    return None


def read_logs(files: list[LogFile]) -> LogReading:
    """One run's saved streams -> its reading. Raises NothingRecognised (nothing of llama.cpp in them) and
    ParseError (figures that cannot be true, which a stored run would hold as parse_error)."""
    roles, log, outputs = _roles(files)
    log_text = log[1] if log else ""
    output_text = "\n".join(text for _, text in outputs)
    if bench := next((text for _, text in [*outputs, *([log] if log else [])] if _is_bench(text)), None):
        return _bench_reading(bench, log_text, roles)
    kind = detect_kind(log_text) if log else None
    if kind in (None, "failed-run") and any(CHAT_RE.search(text) for _, text in outputs):
        kind = "chat-cli"  # its stderr holds a few library lines at most; the screen on stdout tells
    if kind is None:
        shown = [f.name for f in files if f.data.strip()] or [f.name for f in files]
        why = "no llama.cpp log, figure or error line" if any(f.data.strip() for f in files) else "empty"
        raise NothingRecognised(f"nothing recognised in {', '.join(shown)}: {why}; {READABLE}")
    notes: list[str] = []
    if kind == "server":
        server = read_server_log(log_text)
        parsed, notes = _server_reading(server)
        failure = saved_log_failure(server, log_text)
    else:
        parsed = parse_run(output_text, log_text)
        failure = _cli_failure(kind, parsed, log_text)
    check_ranges(parsed)
    return LogReading(
        kind=kind,
        parsed=parsed,
        failure_class=failure[0] if failure else None,
        failure_detail=failure[1] if failure else None,
        files=roles,
        notes=notes,
    )


def _roles(files: list[LogFile]) -> tuple[list[FileRole], tuple[str, str] | None, list[tuple[str, str]]]:
    """(roles, the log as (name, text) or None, the outputs): the log is the file with most llama.cpp lines."""
    texts: list[tuple[LogFile, str, int]] = []
    for f in files:
        if not f.data.strip():
            continue
        text = f.data.decode(errors="replace")
        if b"\x00" in f.data or text.count("\ufffd") > BINARY_SHARE * len(text):
            raise NothingRecognised(f"nothing recognised in {f.name}: binary data, not a log; {READABLE}")
        score = 0 if CHAT_RE.search(text) else _log_lines(text) + bool(match_signature(text))
        texts.append((f, text, score))
    best = max(texts, key=lambda t: t[2], default=None)
    log = best if best and best[2] > 0 else None
    roles, outputs = [], []
    for f in files:
        entry = next((t for t in texts if t[0] is f), None)
        if entry is None:
            roles.append(FileRole(f.name, "empty", "no bytes, or only blank lines"))
        elif entry is log:
            roles.append(FileRole(f.name, "log", f"{entry[2]} llama.cpp log lines: read for figures"))
        else:
            outputs.append((f.name, entry[1]))
            why = (
                "the chat llama-cli's screen: only its speed line is read"
                if CHAT_RE.search(entry[1])
                else "the run's output (echoed prompt, generated text): never read for figures"
            )
            if entry[2]:
                why += f"; it holds {entry[2]} log-like lines, fewer than {log[0].name}: give each run's files apart"
            roles.append(FileRole(f.name, "output", why))
    return roles, (log[0].name, log[1]) if log else None, outputs


def _server_reading(server: ServerLog) -> tuple[ParsedLog, list[str]]:
    requests, measured_text = server.measured()
    parsed = server_metrics([r.row() for r in requests], measured_text, wall_s=None, concurrency=None, metrics_delta={})
    for key in ("metrics_delta", "measured_log_offsets"):
        parsed.extra.pop(key, None)
    parsed.version = parsed.version or parse_version(clean_lines("\n".join(server.lines)))  # from the start-up
    notes = [
        f"{len(requests)} finished requests pooled (decode_tps = the tokens each counts as its build counts them, "
        f"over the sum of eval time)"
    ]
    if server.warmup:
        notes.append(
            f"left out task {server.warmup.task}, the first request after the server's start-up: orch's "
            "uncounted warm-up (the log marks it), as the stored run counted it"
        )
    else:
        notes.append(
            "every request counts: the log marks no warm-up (a log orch stored from a server it started "
            "marks its warm-up)"
        )
    notes.append("total_ms, aggregate_tps and ttft_ms_mean need the run's wall clock and HTTP timings: not in a log")
    return parsed, notes


def _is_bench(text: str) -> bool:
    """llama-bench's JSON: every line (jsonl) or the whole (json) an object with its avg_ts."""
    if not text.lstrip().startswith(("{", "[")):
        return False
    try:
        tests = parse_bench(text)
    except ParseError:
        return False
    return bool(tests) and all(isinstance(t, dict) and "avg_ts" in t for t in tests)


def _bench_reading(stdout: str, stderr: str, roles: list[FileRole]) -> LogReading:
    """As a bench-mode run reads it (parse/modes.py): one test, or a parse error saying how to split them."""
    try:
        parsed = parse_bench_run(stdout, stderr)
    except ParseError as exc:
        return LogReading(
            kind="bench",
            parsed=ParsedLog(metrics=dict.fromkeys(METRIC_KEYS)),
            failure_class="parse_error",
            failure_detail=str(exc),
            files=roles,
        )
    check_ranges(parsed)
    return LogReading(kind="bench", parsed=parsed, failure_class=None, failure_detail=None, files=roles)


# The tool whose block a log of each kind must hold (its figures are read as that tool's run).
KIND_TOOLS = {
    "speculative": "llama-speculative-simple",
    "completion": "llama-completion",
    "chat-cli": "llama-completion",
}


def _cli_failure(kind: str, parsed: ParsedLog, text: str) -> tuple[str, str] | None:
    """The class a stored CLI run gets (parse.failure.decide_failure, as run time calls it), as far as the log
    tells: without the exit status, an abort's line stands for the signal."""
    found = decide_failure(text, expects_speculation=kind == "speculative", parsed=parsed, tool=KIND_TOOLS.get(kind))
    if found is None:
        if kind == "failed-run":
            return "truncated_log", (
                "the log stops before any figure, with no error line: a stored run is "
                "truncated_log (exit 0), crash_signal (killed by a signal) or timeout; the log "
                "alone cannot tell which"
            )
        return None
    if found.missing:
        return found.name, f"the log lacks {found.missing}: its last lines were lost"
    if found.name == "crash_signal":
        return found.name, f"aborted: {found.line}"
    if found.line:  # a known error line
        return found.name, f"the log says: {found.line}"
    return found.name, "the speculative tool ran but never drafted (no draft tokens, no statistics)"


def _log_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if LOG_LINE_RE.match(line))


def _start_lines(text: str) -> bool:
    return any(START_RE.match(strip_prefixes(raw)[0]) for raw in text.splitlines())
