"""An HTTP server on 127.0.0.1 in a thread of the test process, for `with`: serving from enter, shut down and
joined on exit. The stand-ins for the Hugging Face Hub (hub_server.py) and PyPI (pypi_index.py) are two of these."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    def __init__(self, handler):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
