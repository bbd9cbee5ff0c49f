"""A small Hugging Face Hub-compatible HTTP server for tests: enough of the API for ``huggingface_hub``'s
``create_repo`` and ``upload_folder`` (the Hub itself cannot be reached from here).

It speaks: ``POST /api/repos/create``, ``POST /api/validate-yaml`` (the card's metadata is parsed with
``huggingface_hub``'s own ``DatasetCard``; a parse error is the Hub's 400), ``POST
/api/<type>s/<owner>/<name>/preupload/<revision>`` (every file "regular", i.e. sent inline in the commit,
so no LFS or Xet storage is needed) and ``POST .../commit/<revision>`` (the NDJSON commit: its files are
decoded and kept in ``state.repos``). Every request must carry ``Authorization: Bearer <FAKE_TOKEN>``.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAKE_TOKEN = "hf_fake_token_for_tests"
STOP_POLL = 0.05  # seconds between serve_forever's checks for stop(): its default 0.5 s is each test's wait at the end
_REPO_PATH = re.compile(r"^/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)/(?P<what>preupload|commit)/")


@dataclass
class HubState:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)  # "datasets/owner/name" -> path -> bytes
    private: dict[str, bool] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)  # commit summaries
    requests: list[str] = field(default_factory=list)  # "METHOD path"


class _Handler(BaseHTTPRequestHandler):
    state: HubState

    def log_message(self, *_: object) -> None:
        pass

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.state.requests.append(f"POST {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Authorization") != f"Bearer {FAKE_TOKEN}":
            return self._reply(401, {"error": "Invalid credentials in Authorization header"})
        if self.path.startswith("/api/repos/create"):
            request = json.loads(body)
            key = f"{request.get('type', 'model')}s/{request['organization']}/{request['name']}" \
                if request.get("organization") else f"{request.get('type', 'model')}s/{request['name']}"
            self.state.repos.setdefault(key, {})
            self.state.private[key] = bool(request.get("private")) or request.get("visibility") == "private"
            return self._reply(200, {"url": f"http://{self.headers['Host']}/{key}", "name": key})
        if self.path.startswith("/api/validate-yaml"):
            return self._validate(json.loads(body)["content"])
        match = _REPO_PATH.match(self.path)
        if match is None:
            return self._reply(404, {"error": f"no route {self.path}"})
        key = f"{match['type']}/{match['repo']}"
        if key not in self.state.repos:
            return self._reply(404, {"error": "Repository not found"})
        if match["what"] == "preupload":
            files = json.loads(body)["files"]
            return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                               for f in files]})
        for line in body.decode().splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                self.state.commits.append(item["value"]["summary"])
            elif item["key"] == "file":
                self.state.repos[key][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            else:
                return self._reply(400, {"error": f"the fake Hub takes inline files only, not {item['key']}"})
        oid = f"{len(self.state.commits):040x}"
        return self._reply(200, {"commitUrl": f"http://{self.headers['Host']}/{key}/commit/{oid}", "commitOid": oid})

    def _validate(self, content: str) -> None:
        from huggingface_hub import DatasetCard

        try:
            DatasetCard(content, ignore_metadata_errors=False)
        except ValueError as exc:
            return self._reply(400, {"errors": [{"message": str(exc)}]})
        return self._reply(200, {"errors": [], "warnings": []})


class FakeHubServer:
    def __init__(self) -> None:
        self.state = HubState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(STOP_POLL,), daemon=True)

    def start(self) -> FakeHubServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
