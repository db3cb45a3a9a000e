"""Whether a text that parted from its control's parted at a near tie: the target's two most likely tokens at the
first differing token, asked of the build's own llama-server.

Greedy speculation keeps the target's text in exact arithmetic; a batched verification computes the logits in
another order than decoding one token, so where the target's top two are nearly equal the other one can win. That
is the cause orch names only where it is seen: the two texts' tokens are the target's top two there and their
log-probabilities lie within analyze/verdict.NEAR_TIE_NATS. Anywhere else (another pair of tokens, a wide margin, a
build whose server answers no top list, a prompt file that is gone or no regular file) the text just "differs from
token N".

One llama-server per target (its build, model, threads and offload as the control ran them), started when first
asked and stopped with the judge; one request per distinct prefix: the control's prompt and its text up to the
token, the prompt as the program tokenizes it (the server tokenizes a text part as llama-speculative-simple does,
special tokens and BOS included), the text as token ids.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests

from orchestrator import input_files
from orchestrator.errors import ServerFailed
from orchestrator.parse.server import top_choices
from orchestrator.recipe import argv as flags
from orchestrator.run.server import Server

REQUEST_TIMEOUT_S = 120.0
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TopTwo:
    """The target's two most likely tokens where two texts part, and whether they are the two texts' tokens."""

    margin: float  # log-probability of the first minus the second's (>= 0)
    texts_are_top_two: bool  # the control's token and the arm's are the target's top two (in either order)


class TieJudge:
    """judge(control argv, prefix ids, control's token, arm's token) -> TopTwo, or None where it cannot be had.
    A context manager: the servers it started stop on leaving."""

    def __init__(self) -> None:
        self._servers: dict[tuple, Server | None] = {}
        self._seen: dict[tuple, list[tuple[int, float]] | None] = {}
        self._logs = tempfile.TemporaryDirectory(prefix="orch-near-tie-")

    def __enter__(self) -> TieJudge:
        return self

    def __exit__(self, *_) -> None:
        for server in self._servers.values():
            if server:
                server.stop()
        self._logs.cleanup()

    def __call__(self, argv: list[str], prefix: list[int], theirs: int, mine: int) -> TopTwo | None:
        top = self.top(argv, prefix)
        if not top or len(top) < 2:
            return None
        (first, p1), (second, p2) = top[:2]
        return TopTwo(margin=max(p1 - p2, 0.0), texts_are_top_two={first, second} == {theirs, mine})

    def top(self, argv: list[str], prefix: list[int]) -> list[tuple[int, float]] | None:
        """The target's two most likely next tokens after argv's prompt and these ids, (id, log-probability) best
        first, as the server of argv's build, target, threads and offload computes them; None where it cannot."""
        prompt, key = _prompt(argv), _server_key(argv)
        if prompt is None or key is None:
            return None
        seen = (key, prompt, tuple(prefix))
        if seen not in self._seen:
            server = self._server(key)
            self._seen[seen] = _ask(server, prompt, prefix) if server else None
        return self._seen[seen]

    def _server(self, key: tuple) -> Server | None:
        if key not in self._servers:
            binary, model, threads, layers, ctx = key
            argv = [
                str(binary),
                "-m",
                model,
                "-c",
                ctx,
                "-np",
                "1",
                *(["-t", threads] if threads else []),
                *(["-ngl", layers] if layers else []),
            ]
            folder = Path(self._logs.name) / str(len(self._servers))
            folder.mkdir()
            server = Server(argv, folder, start_timeout=START_TIMEOUT_S)
            try:
                server.start()
            except ServerFailed:
                server = None  # no judgement: the texts just differ
            self._servers[key] = server
        return self._servers[key]


def _server_key(argv: list[str]) -> tuple | None:
    """The server that scores like the control: its build's llama-server on its target, threads and offload."""
    model, threads, layers, ctx = flags.flag_values(
        argv, [flags.TARGET_MODEL, flags.THREADS, flags.GPU_LAYERS, flags.CTX]
    )
    binary = Path(argv[0]).with_name("llama-server") if argv else None
    if not model or binary is None or not binary.is_file() or not Path(model).is_file():
        return None
    return binary, model, threads, layers, ctx or "4096"


def _prompt(argv: list[str]) -> str | None:
    text, file = flags.flag_values(argv, [flags.PROMPT, flags.PROMPT_FILE])
    if text is not None:
        return text
    try:  # read as every file a recipe names: a FIFO or /dev/zero in the prompt's place is no prompt
        return input_files.read_text(file) if file else None
    except (OSError, UnicodeDecodeError):
        return None


def _ask(server: Server, prompt: str, prefix: list[int]) -> list[tuple[int, float]] | None:
    body = {"prompt": [prompt, *prefix], "n_predict": 1, "n_probs": 2, "temperature": 0, "cache_prompt": False}
    try:
        answer = requests.post(f"{server.url}/completion", json=body, timeout=REQUEST_TIMEOUT_S)
        return top_choices(answer.json()) if answer.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None
