"""Why a llama-server run failed: the one set of rules a live server run is stored by (run/server.py,
run/server_run.py) and a saved server log is read by (parse/saved_logs.py, `orch parse`).

Before the server serves, its log and its exit decide (start_failure): an error line names its class, a signal
(or, where the exit is unknown, an abort line) is crash_signal, another exit is other, and a log that ends while
the model loads is a timeout. Once it serves, a live run's class comes from HTTP (no drafts at the warm-up:
spec_not_engaged; a request past --timeout: timeout; failed requests: other), which the log mirrors: a saved log is
judged from what it shows of the same (saved_log_failure).
"""

from __future__ import annotations

from .failure import CRASH_RE, Ended, Failure, decide_failure, line_at
from .server_log import ServerLog


def start_failure(text: str, ended: Ended | None) -> Failure:
    """Why a server that never served failed, from its log and how it ended (None: unknown, a saved log)."""
    found = decide_failure(text, expects_speculation=False, ended=ended)
    if found:
        return found
    return Failure("other") if ended else Failure("timeout")


def saved_log_failure(server: ServerLog, text: str) -> tuple[str, str] | None:
    """(class, why) of a saved server log (`orch parse`), by the rules a live run is stored by: before serving,
    start_failure with the exit unknown; after, what the log shows of the HTTP side."""
    if not server.serving:
        found = start_failure(text, None)
        why = {
            "crash_signal": f"the server aborted before serving: {found.line}",
            "timeout": "the log ends before the server listened, with no error: a server still loading at "
            "server_timeout is stored as timeout (one that exited without a word, as other)",
        }.get(found.name, f"the log says: {found.line}")
        return found.name, why
    crash = CRASH_RE.search(text)
    if server.loads_draft and not server.engaged and not any(r.draft_n for r in server.requests):
        return "spec_not_engaged", (
            "a draft model was loaded but the log shows no drafts (llama-server before "
            "mid-2025 logs none at its default verbosity)"
        )
    if crash:
        return "other", f"the server aborted mid-run ({line_at(text, crash.start())}): its requests failed"
    if server.unfinished:
        return "timeout", (
            f"request task {server.unfinished[0]} never finished: a request past --timeout stops "
            "the run (stored as timeout)"
        )
    return None
