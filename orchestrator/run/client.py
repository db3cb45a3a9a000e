"""HTTP requests to llama-server: one streamed /completion per prompt, timed from send to first token."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field

import requests
from urllib3.exceptions import ReadTimeoutError

from orchestrator.hashing import sha256_text
from orchestrator.recipe.prompts import Prompt

TIMING_KEYS = (
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "predicted_n",
    "predicted_ms",
    "predicted_per_second",
    "draft_n",
    "draft_n_accepted",
)


@dataclass
class RequestOptions:
    n_predict: int
    seed: int
    temperature: float = 0.0
    cache_prompt: bool = False  # off: every request pays its prompt, so runs compare alike
    ignore_eos: bool = False

    def payload(self, prompt: str) -> dict:
        return {
            "prompt": prompt,
            "n_predict": self.n_predict,
            "seed": self.seed,
            "temperature": self.temperature,
            "top_k": 1 if self.temperature == 0 else 40,
            "cache_prompt": self.cache_prompt,
            "ignore_eos": self.ignore_eos,
            "stream": True,
        }


@dataclass
class RequestResult:
    prompt: Prompt
    client: int  # which client thread sent it
    status: str  # ok, error
    http_status: int | None = None
    error: str | None = None
    timings: dict = field(default_factory=dict)
    ttft_ms: float | None = None
    wall_ms: float | None = None
    output_sha256: str | None = None
    output_chars: int = 0
    output_text: str | None = None  # kept so a difference from the baseline's output can be located
    started: float = 0.0  # time.time() at send


TIMED_OUT = "timeout"
MID_STREAM = "the run's time limit passed mid-stream"


def complete(
    base_url: str, prompt: Prompt, options: RequestOptions, *, timeout: float, deadline: float | None = None
) -> RequestResult:
    """Send one streamed completion; never raises for HTTP or connection errors (they are results).

    `timeout` bounds each socket wait; `deadline` (time.monotonic) bounds the whole run: a server that keeps
    streaming slowly is cut off there and the request is marked TIMED_OUT.
    """
    # Client threads are named client_0, client_1, ...: the number says which client sent the request.
    name = threading.current_thread().name
    client = int(name.rsplit("_", 1)[1]) if name.startswith("client_") else 0
    result = RequestResult(prompt=prompt, client=client, status="error", started=time.time())
    start = time.monotonic()
    text: list[str] = []
    cut = threading.Event()  # set by the watchdog: the run's deadline passed while a read was waiting
    try:
        with requests.post(
            f"{base_url}/completion", json=options.payload(prompt.prompt), stream=True, timeout=timeout
        ) as res:
            result.http_status = res.status_code
            if res.status_code != 200:
                result.error = res.text[:500]
                return result
            # One deadline for the whole answer, bytes without a newline included: a socket wait is bounded by
            # `timeout` afresh at every byte, so a server trickling a byte at a time would hold a read for ever.
            watchdog = _watchdog(res, deadline, cut) if deadline is not None else None
            try:
                done = _read_stream(res, result, text, start, deadline)
            finally:
                if watchdog:
                    watchdog.cancel()
            if not done:
                return result
    except (requests.RequestException, ValueError) as exc:
        if cut.is_set():  # the watchdog shut the socket under a waiting read: however that read failed
            result.status, result.error = TIMED_OUT, MID_STREAM
            return result
        if not isinstance(exc, requests.Timeout | requests.ConnectionError):
            result.error = f"{type(exc).__name__}: {exc}"[:500]
            return result
        if not _read_timed_out(exc):
            result.error = f"{type(exc).__name__}: {exc}"[:500]
            return result
        result.status, result.error = TIMED_OUT, f"no answer within the run's time limit ({exc})"[:500]
        return result
    if cut.is_set() and not result.timings:  # the watchdog ended the stream: no final chunk came in time
        result.status, result.error = TIMED_OUT, MID_STREAM
        return result
    result.wall_ms = (time.monotonic() - start) * 1000
    output = "".join(text)
    result.output_sha256 = sha256_text(output)
    result.output_chars = len(output)
    result.output_text = output
    result.status = "ok" if result.timings else "error"
    if not result.timings:
        result.error = "the stream ended without a final chunk carrying timings"
    return result


def _read_stream(res, result: RequestResult, text: list[str], start: float, deadline: float | None) -> bool:
    """The streamed chunks into result and text; False where the answer ended the request (its error, the deadline)."""
    for line in res.iter_lines():
        if deadline is not None and time.monotonic() > deadline:
            result.status, result.error = TIMED_OUT, MID_STREAM
            return False
        if not line.startswith(b"data: "):
            continue
        chunk = json.loads(line[6:])
        if "error" in chunk:  # the server gave up mid-stream (e.g. early-2026 output parsing errors)
            err = chunk["error"]
            result.error = f"server error {err.get('code')}: {err.get('message')}"[:500]
            return False
        if chunk.get("content"):
            if result.ttft_ms is None:
                result.ttft_ms = (time.monotonic() - start) * 1000
            text.append(chunk["content"])
        if chunk.get("stop"):
            result.timings = chunk.get("timings") or {}
            break
    return True


def _watchdog(res, deadline: float, cut: threading.Event) -> threading.Timer:
    """At the deadline, shut the response's socket: a read waiting on it returns at once."""

    def shut() -> None:
        cut.set()
        sock = getattr(getattr(res.raw, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), shut)
    timer.daemon = True
    timer.start()
    return timer


def _read_timed_out(exc: requests.RequestException) -> bool:
    """A server that stopped answering: requests raises Timeout before the headers, but a ConnectionError wrapping
    urllib3's ReadTimeoutError once a stream has begun (a hung or stopped llama-server mid-answer)."""
    return isinstance(exc, requests.Timeout) or any(isinstance(a, ReadTimeoutError) for a in exc.args)


def send_all(
    base_url: str, prompts: list[Prompt], options: RequestOptions, *, concurrency: int, timeout: float
) -> tuple[list[RequestResult], float]:
    """Every prompt once, `concurrency` at a time from as many client threads; (results, wall seconds)."""
    start = time.monotonic()
    deadline = start + timeout

    def one(p: Prompt) -> RequestResult:
        left = deadline - time.monotonic()
        if left <= 0:
            return RequestResult(prompt=p, client=0, status=TIMED_OUT, error="not sent: the run's time limit passed")
        return complete(base_url, p, options, timeout=left, deadline=deadline)

    if concurrency <= 1:
        return [one(p) for p in prompts], time.monotonic() - start
    # `concurrency` clients, client k sending prompt k first and then the next prompt left until none is (a pool
    # starts threads lazily, and a fast first request could leave a client that never sent): results in prompt order.
    results: list[RequestResult | None] = [None] * len(prompts)
    clients = min(concurrency, len(prompts))
    pending = iter(range(clients, len(prompts)))
    lock = threading.Lock()

    def client(first: int) -> None:
        i: int | None = first
        while i is not None:
            results[i] = one(prompts[i])
            with lock:
                i = next(pending, None)

    threads = [threading.Thread(target=client, args=(k,), name=f"client_{k}", daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.monotonic() - start
