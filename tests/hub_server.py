"""A stand-in for the Hugging Face Hub on 127.0.0.1, serving exactly what `huggingface_hub` asks of it when orch
fetches a model (read from huggingface_hub 2.4's file_download.py and hf_api.py):

    HEAD/GET /{owner}/{repo}/resolve/{revision}/{path}   hf_hub_download: X-Repo-Commit, ETag (the sha256, as the
                                                         hub gives for LFS files) or X-Linked-Etag/X-Linked-Size,
                                                         Content-Length; the body on GET
    GET /api/models/{owner}/{repo}/tree/{revision}       list_repo_files: one JSON page of {type, oid, size, path,
                                                         lfs: {oid, size, pointerSize}}

Errors carry X-Error-Code as the hub's do (RepoNotFound, RevisionNotFound, EntryNotFound): huggingface_hub turns
them into its own exception classes. Anything else is a 404, such as the agent-harness registry the library asks
for in passing (best-effort, it carries on without it). Every request is recorded, so a test can tell a download
from a cache hit.

    with HubServer({"owner/Repo-GGUF": {"x-Q4_K_M.gguf": Path(...)}}) as hub:
        env["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import unquote, urlsplit

from local_server import LocalServer


class HubServer(LocalServer):
    def __init__(self, repos: dict[str, dict[str, Path | bytes]]):
        self.repos = {repo: {name: _entry(content) for name, content in files.items()} for repo, files in repos.items()}
        self.commits = {repo: hashlib.sha1(repo.encode()).hexdigest() for repo in repos}
        self.requests: list[tuple[str, str]] = []
        super().__init__(self._handler())

    @property
    def url(self) -> str:
        return self.origin

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):
                hub.requests.append(("HEAD", self.path))
                self._respond(body=False)

            def do_GET(self):
                hub.requests.append(("GET", self.path))
                self._respond(body=True)

            def log_message(self, *args):  # quiet: the test output is orch's
                pass

            def _respond(self, body: bool):
                path = unquote(urlsplit(self.path).path).strip("/").split("/")
                if path[:2] == ["api", "models"] and len(path) >= 6 and path[4] == "tree":
                    return self._tree("/".join(path[2:4]), path[5], body)
                if len(path) >= 5 and path[2] == "resolve":
                    return self._file("/".join(path[:2]), path[3], "/".join(path[4:]), body)
                self._error(404, "RepoNotFound", body)

            def _tree(self, repo: str, revision: str, body: bool):
                if not self._known(repo, revision, body):
                    return
                listing = [
                    {
                        "type": "file",
                        "oid": e["git_oid"],
                        "size": e["size"],
                        "path": name,
                        "lfs": {"oid": e["sha256"], "size": e["size"], "pointerSize": 134},
                    }
                    for name, e in hub.repos[repo].items()
                ]
                self._send(200, {"Content-Type": "application/json"}, json.dumps(listing).encode(), body)

            def _file(self, repo: str, revision: str, name: str, body: bool):
                if not self._known(repo, revision, body):
                    return
                entry = hub.repos[repo].get(name)
                if entry is None:
                    return self._error(404, "EntryNotFound", body, commit=hub.commits[repo])
                self._send(
                    200,
                    {
                        "X-Repo-Commit": hub.commits[repo],
                        "ETag": f'"{entry["sha256"]}"',
                        "X-Linked-Etag": f'"{entry["sha256"]}"',
                        "X-Linked-Size": str(entry["size"]),
                        "Content-Type": "application/octet-stream",
                    },
                    entry["data"],
                    body,
                )

            def _known(self, repo: str, revision: str, body: bool) -> bool:
                if repo not in hub.repos:
                    self._error(404, "RepoNotFound", body)
                    return False
                if revision not in ("main", hub.commits[repo]):
                    self._error(404, "RevisionNotFound", body)
                    return False
                return True

            def _error(self, status: int, code: str, body: bool, commit: str | None = None):
                headers = {"X-Error-Code": code, "X-Error-Message": code, "Content-Type": "application/json"}
                if commit:
                    headers["X-Repo-Commit"] = commit
                self._send(status, headers, json.dumps({"error": code}).encode(), body)

            def _send(self, status: int, headers: dict, data: bytes, body: bool):
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(data))}.items():
                    self.send_header(key, value)
                self.end_headers()
                if body:
                    self.wfile.write(data)

        return Handler


def _entry(content: Path | bytes) -> dict:
    data = Path(content).read_bytes() if isinstance(content, Path) else content
    return {
        "data": data,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "git_oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
    }
