"""A llama-server log read on its own: per-request timing blocks and draft acceptance lines, pooled like a stored
server run (parse.server.server_metrics), and what the log says about start-up and speculation.

Every era prints one `print_timing` block per finished request:
    0c1e57098  `slot print_timing: id  3 | task 7 | prompt eval time = ...` (one tagged line per field)
    f49e917    `slot print_timing: id  1 | task 9 | ` then untagged `prompt eval time = ...` lines
A log is read whole: every finished request counts, unless the log itself marks a warm-up. orch's first request
to a server it started is an uncounted warm-up, and orch writes WARMUP_MARK into the server's log once it is done:
a log holding that line has its first request after the start-up left out, exactly as the stored run counted it.
A run on a reused server stores no start-up and no warm-up; a log from outside orch marks none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lines import TIMESTAMP_RE, strip_prefixes, to_float, to_int
from .spec import SERVER_ACC_RE

SERVER_TAG_RE = re.compile(r"^(?:srv|slot|que)\s+\S{1,12}: ")
TIMING_RE = re.compile(r"print_timing: id\s+(-?\d+) \| task (-?\d+) \|\s?(.*)$")
PROMPT_RE = re.compile(r"^\s*prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens")
# ... and the rate the build prints for it (n / t before 2026, (n - 1) / t at 0c1e57098: parse.server.decode_steps)
EVAL_RE = re.compile(
    r"^\s*eval time =\s+([\d.]+) ms /\s+(\d+) tokens"
    r"(?:\s*\(\s*[\d.]+ ms per token,\s*([\d.]+) tokens per second)?"
)
LAUNCH_RE = re.compile(r"id\s+(-?\d+) \| task (-?\d+) \| processing task")
RELEASE_RE = re.compile(r"id\s+(-?\d+) \| task (-?\d+) \| stop processing")
# `srv  llama_server: model loaded` (2026-05+) or `main: model loaded` / `main: server is listening on` (before).
STARTED_RE = re.compile(r"^(?:srv\s+)?(?:llama_server|main): (?:model loaded|server is listening|listening on)")
# Markers only llama-server prints, for telling a server log from a CLI tool's before any request finished.
SERVER_MARKER_RE = re.compile(
    r"^(?:srv\s+)?(?:llama_server|main): (?:initializing|loading model|model loaded|server is listening"
    r"|listening on|starting the main loop)|HTTP server"
)
DRAFT_MODEL_RE = re.compile(r"loading draft model")
# What orch appends to a server's log after its warm-up request (run/server_run.py): the log's own mark.
WARMUP_MARK = "orch: warm-up request done (not counted); the run's requests follow"
ENGAGED_RE = re.compile(r"speculative decoding context initialized|adding speculative implementation")


@dataclass
class TimedRequest:
    slot: int
    task: int
    first_line: int
    last_line: int
    prompt_n: int | None = None
    prompt_ms: float | None = None
    predicted_n: int | None = None
    predicted_ms: float | None = None
    predicted_rate: float | None = None  # as the log prints it
    draft_n: int = 0
    draft_n_accepted: int = 0

    def row(self) -> dict:
        """The request in the `requests` table's shape, as server_metrics reads it."""
        rate = self.predicted_rate
        if rate is None and self.predicted_ms and self.predicted_n:
            rate = self.predicted_n / self.predicted_ms * 1000
        return {
            "status": "ok",
            "prompt_n": self.prompt_n,
            "prompt_ms": self.prompt_ms,
            "predicted_n": self.predicted_n,
            "predicted_ms": self.predicted_ms,
            "draft_n": self.draft_n,
            "draft_n_accepted": self.draft_n_accepted,
            "predicted_per_second": rate,
            "ttft_ms": None,
        }


@dataclass
class ServerLog:
    lines: list[str]  # raw lines, prefixes kept (the parsers strip them again)
    server_lines: int = 0  # lines carrying a srv/slot/que tag or a server-only message
    started_line: int | None = None  # where the server said it was loaded / listening
    requests: list[TimedRequest] = field(default_factory=list)  # finished requests, in log order
    launched: int = 0  # requests a slot started processing
    unfinished: list[int] = field(default_factory=list)  # tasks launched that never finished
    loads_draft: bool = False
    engaged: bool = False
    marked_warmup: bool = False  # orch's WARMUP_MARK is in the log

    @property
    def serving(self) -> bool:
        """The server got to serving: it said so, or the log (of a reused server) shows requests."""
        return self.started_line is not None or bool(self.requests) or self.launched > 0

    @property
    def is_server(self) -> bool:
        return self.server_lines > 0 or bool(self.requests)

    @property
    def warmup(self) -> TimedRequest | None:
        """orch's warm-up request: the first finished request after the start-up, when the log marks one (its
        timing lines may follow the mark: the server's log thread writes them late)."""
        if (
            not self.marked_warmup
            or self.started_line is None
            or not self.requests
            or self.requests[0].first_line < self.started_line
        ):
            return None
        return self.requests[0]

    def measured(self) -> tuple[list[TimedRequest], str]:
        """The counted requests and the log text after the warm-up (statistics and acceptance lines)."""
        warm = self.warmup
        if warm is None:
            return self.requests, "\n".join(self.lines)
        cut = _release_line(self.lines, warm) + 1
        return self.requests[1:], "\n".join(self.lines[cut:])


def read_server_log(text: str) -> ServerLog:
    log = ServerLog(lines=text.splitlines())
    current: TimedRequest | None = None
    launched: list[tuple[int, int]] = []
    for i, raw in enumerate(log.lines):
        line = _without_timestamp(raw)
        bare = strip_prefixes(raw)[0]
        tagged = bool(SERVER_TAG_RE.match(line))
        log.server_lines += tagged or bool(SERVER_MARKER_RE.search(line))
        if log.started_line is None and STARTED_RE.match(line):
            log.started_line = i
        log.loads_draft |= bool(DRAFT_MODEL_RE.search(bare))
        log.engaged |= bool(ENGAGED_RE.search(bare))
        log.marked_warmup |= raw.startswith(WARMUP_MARK)
        if (m := TIMING_RE.search(line)) and None not in (key := _slot_task(m)):
            if current is None or (current.slot, current.task) != key or _field_set(current, m.group(3)):
                current = TimedRequest(slot=key[0], task=key[1], first_line=i, last_line=i)
                log.requests.append(current)
            _read_field(current, m.group(3), i)
        elif current is not None and not tagged and _read_field(current, bare, i):
            pass  # an untagged continuation line of the block (f49e917)
        else:
            current = None
            if (m := LAUNCH_RE.search(line)) and None not in (key := _slot_task(m)):
                launched.append(key)
    finished = {(r.slot, r.task) for r in log.requests}
    log.launched = len(launched)
    log.unfinished = [task for slot, task in launched if (slot, task) not in finished]
    log.requests = [r for r in log.requests if r.predicted_n is not None]
    return log


def _read_field(req: TimedRequest, text: str, i: int) -> bool:
    """Fill one field of a timing block from `text`; False when it is no field of a block."""
    if m := PROMPT_RE.match(text):
        req.prompt_ms, req.prompt_n = to_float(m.group(1)), to_int(m.group(2))
    elif m := EVAL_RE.match(text):
        req.predicted_ms, req.predicted_n = to_float(m.group(1)), to_int(m.group(2))
        req.predicted_rate = to_float(m.group(3)) if m.group(3) else None
    elif m := SERVER_ACC_RE.search(text):
        req.draft_n_accepted, req.draft_n = to_int(m.group(2)) or 0, to_int(m.group(3)) or 0
    elif not re.match(r"^\s*(?:total time|graphs reused|acc per pos) =", text):
        return False
    req.last_line = i
    return True


def _field_set(req: TimedRequest, text: str) -> bool:
    """A field already filled means a new request on the same slot and task id (a restarted server)."""
    return bool(
        PROMPT_RE.match(text) and req.prompt_n is not None or EVAL_RE.match(text) and req.predicted_n is not None
    )


def _release_line(lines: list[str], req: TimedRequest) -> int:
    """The line that ends the request: its slot's release, else its block's last line."""
    for i in range(req.last_line + 1, min(len(lines), req.last_line + 50)):
        if (m := RELEASE_RE.search(lines[i])) and _slot_task(m) == (req.slot, req.task):
            return i
    return req.last_line


def _slot_task(m: re.Match) -> tuple[int | None, int | None]:
    return to_int(m.group(1)), to_int(m.group(2))  # None for a number no log prints (a damaged line)


def _without_timestamp(raw: str) -> str:
    m = TIMESTAMP_RE.match(raw)
    return raw[m.end() :] if m else raw
