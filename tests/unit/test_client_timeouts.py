"""A llama-server that stops answering mid-stream is a timeout, not an error: requests reports that case as a
ConnectionError, and the client must tell it from a refused or reset connection."""

import socket
import threading

import pytest

from orchestrator.recipe.prompts import Prompt
from orchestrator.run import client

HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CHUNK = b'data: {"content": "Once"}\n\n'


def serve_once(reply: bytes, then_close: bool):
    """A one-connection HTTP server in a thread: reads the request, sends `reply`, then hangs or closes."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    release = threading.Event()

    def handle():
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(reply)
        if not then_close:
            release.wait(30)
        conn.close()
        srv.close()

    threading.Thread(target=handle, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}", release


@pytest.mark.parametrize(
    "reply",
    [b"", HEADERS, HEADERS + b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK)],
    ids=["before-headers", "after-headers", "mid-stream"],
)
def test_a_server_that_stops_answering_is_a_timeout(reply):
    url, release = serve_once(reply, then_close=False)
    try:
        res = client.complete(url, Prompt("p", "", "hi"), client.RequestOptions(n_predict=8, seed=1), timeout=0.5)
    finally:
        release.set()
    assert res.status == client.TIMED_OUT and "time limit" in res.error


def test_a_connection_closed_mid_stream_is_an_error_not_a_timeout():
    url, _ = serve_once(HEADERS + b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK), then_close=True)
    res = client.complete(url, Prompt("p", "", "hi"), client.RequestOptions(n_predict=8, seed=1), timeout=5)
    assert res.status == "error"


def test_a_refused_connection_is_an_error_not_a_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        res = client.complete(
            f"http://127.0.0.1:{port}", Prompt("p", "", "hi"), client.RequestOptions(n_predict=8, seed=1), timeout=5
        )
    assert res.status == "error" and "ConnectionError" in res.error


def test_every_client_sends_even_when_requests_end_at_once():
    """`concurrency` N means N clients sending: with requests that end at once (a refused port), every client still
    sends at least one, and the results keep the prompts' order."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        prompts = [Prompt(f"p{i}", "", "hi") for i in range(7)]
        results, _ = client.send_all(
            f"http://127.0.0.1:{s.getsockname()[1]}",
            prompts,
            client.RequestOptions(n_predict=8, seed=1),
            concurrency=3,
            timeout=30,
        )
    assert [r.prompt.id for r in results] == [p.id for p in prompts]
    assert {r.client for r in results} == {0, 1, 2} and [r.client for r in results[:3]] == [0, 1, 2]
    assert all(r.status == "error" for r in results)
