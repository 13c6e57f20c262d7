"""A minimal LSP client over stdio (JSON-RPC with Content-Length framing) for `compile-lint server`.

Shared by tests/test_language_server.py and benchmarks/server_latency.py: both drive the
real server process with real messages.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

TIMEOUT = 60


class LspError(RuntimeError):
    """The server answered a request with an error."""


class LspClient:
    """Frames JSON-RPC messages and collects what the server sends, each with the time it arrived."""

    def __init__(self, cwd: str, env: Optional[dict] = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint", "server", "--stdio"], cwd=cwd, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: "queue.Queue[tuple[float, dict]]" = queue.Queue()
        self.next_id = 0
        self.received_at = 0.0  # when the message `wait` last returned arrived (time.perf_counter)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self.messages.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Optional[dict]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Optional[dict]):
        """Send a request and return its result (other messages meanwhile are skipped)."""
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        message = self.wait(lambda m: m.get("id") == request_id and "method" not in m)
        if "error" in message:
            raise LspError(message["error"])
        return message["result"]

    def wait(self, predicate: Callable[[dict], bool], timeout: float = TIMEOUT) -> dict:
        """The next message that matches `predicate`; others (logs, other notifications) are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            arrived, message = self.messages.get(timeout=max(0.0, deadline - time.monotonic()))
            if predicate(message):
                self.received_at = arrived
                return message

    def diagnostics(self, uri: str, version: Optional[int] = None, timeout: float = TIMEOUT) -> dict:
        """The next diagnostics published for `uri` (for `version`, when given)."""
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri
                         and (version is None or m["params"].get("version") == version), timeout)["params"]

    def initialize(self, root_uri: str, capabilities: Optional[dict] = None) -> dict:
        """The initialize handshake; the server's answer."""
        result = self.request("initialize", {"processId": None, "rootUri": root_uri,
                                             "capabilities": capabilities or {}})
        self.notify("initialized", {})
        return result

    def close(self) -> int:
        """Shut the server down; its exit code."""
        self.request("shutdown", None)
        self.notify("exit", None)
        return self.process.wait(timeout=TIMEOUT)

    def kill(self) -> None:
        """Stop the server if it is still running."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
