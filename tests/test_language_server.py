"""`compile-lint server`, driven over stdio with real LSP messages (JSON-RPC, Content-Length framing)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from compile_lint.autofix.apply import fix_text
from compile_lint.autofix.edits import apply_fixes
from compile_lint.linter.config import Config
from compile_lint.linter.diagnostics import Edit, Fix
from compile_lint.linter.engine import lint_text
from compile_lint.linter.suppressions import add_noqa
from compile_lint.rules import RULES_BY_CODE

pytest.importorskip("pygls")

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ecosystem", "gated.py")
TIMEOUT = 60


class LspClient:
    """A minimal LSP client: frames JSON-RPC messages and collects what the server sends."""

    def __init__(self, cwd: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint", "server", "--stdio"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.next_id = 0
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
            self.messages.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        message = self.wait(lambda m: m.get("id") == request_id and "method" not in m)
        assert "error" not in message, message
        return message["result"]

    def wait(self, predicate) -> dict:
        """The next message that matches `predicate`; others (logs, other notifications) are skipped."""
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            if predicate(message):
                return message

    def diagnostics(self, uri: str) -> dict:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri)["params"]

    def close(self) -> int:
        self.request("shutdown", None)
        self.notify("exit", None)
        return self.process.wait(timeout=TIMEOUT)


@pytest.fixture
def client(tmp_path):
    lsp = LspClient(str(tmp_path))
    result = lsp.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
    assert result["serverInfo"]["name"] == "compile-lint"
    assert result["capabilities"]["codeActionProvider"]
    lsp.notify("initialized", {})
    yield lsp
    if lsp.process.poll() is None:
        lsp.process.kill()
        lsp.process.wait()


def _open(client, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version, "text": text}})
    return uri


def _apply(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (all ASCII here, so UTF-16 units are characters)."""
    fix = Fix("safe", "", tuple(Edit(e["range"]["start"]["line"] + 1, e["range"]["start"]["character"] + 1,
                                     e["range"]["end"]["line"] + 1, e["range"]["end"]["character"] + 1, e["newText"])
                                for e in edits))
    new_text, used = apply_fixes(text, [fix])
    assert used == [fix]
    return new_text


def test_diagnostics_on_open_and_change_and_clean_exit(client, tmp_path):
    text = Path(FIXTURE).read_text()
    uri = _open(client, tmp_path / "gated.py", text)
    published = client.diagnostics(uri)
    assert published["version"] == 1
    [finding] = published["diagnostics"]
    assert finding["code"] == "JIT101"
    assert finding["source"] == "compile-lint"
    assert finding["message"] == RULES_BY_CODE["JIT101"].message
    assert finding["range"] == {"start": {"line": 7, "character": 11}, "end": {"line": 7, "character": 22}}
    assert finding["codeDescription"]["href"].endswith("/gb/gb0170.html")

    # A full-text change removes the `noqa`; an incremental change then fixes the `if`.
    changed = text.replace("  # noqa: JIT102", "")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": changed}]})
    published = client.diagnostics(uri)
    assert published["version"] == 2
    assert [(d["code"], d["range"]["start"]["line"]) for d in published["diagnostics"]] == [("JIT101", 7), ("JIT102", 14)]
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{
        "range": {"start": {"line": 7, "character": 11}, "end": {"line": 7, "character": 22}},
        "text": "x.shape[0] > 0"}]})
    published = client.diagnostics(uri)
    assert [d["code"] for d in published["diagnostics"]] == ["JIT102"]
    assert client.close() == 0


def test_columns_are_utf16_code_units(client, tmp_path):
    source = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
              "        tag = \"\U0001F600\"; y = x * 2 if x.sum() > 0 else x\n        return y\n")
    uri = _open(client, tmp_path / "emoji.py", source)
    [finding] = client.diagnostics(uri)["diagnostics"]
    line = source.splitlines()[6]
    column = line.index("x.sum()")
    assert finding["range"]["start"] == {"line": 6, "character": len(line[:column].encode("utf-16-le")) // 2}
    assert finding["range"]["start"]["character"] == column + 1  # the emoji is two UTF-16 units


def test_quick_fixes_are_the_clis_fixes(client, tmp_path):
    example = RULES_BY_CODE["JIT101"].invalid[0]
    path = tmp_path / "model.py"
    uri = _open(client, path, example.code)
    [finding] = client.diagnostics(uri)["diagnostics"]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": finding["range"],
        "context": {"diagnostics": [finding], "only": ["quickfix"]}})
    action, noqa = actions
    assert action["kind"] == "quickfix"
    assert action["title"].endswith("(JIT101, unsafe)")
    assert action["isPreferred"] is False
    assert action["diagnostics"][0]["code"] == "JIT101"
    fixed = _apply(example.code, action["edit"]["changes"][uri])
    assert fixed == fix_text(example.code, str(path), Config(), unsafe=True).text == example.fixed

    # "Add noqa" writes what `--add-noqa` writes, and the finding is gone.
    assert noqa["kind"] == "quickfix" and noqa["title"] == "Add `# noqa: JIT101` (silence this finding)"
    silenced = _apply(example.code, noqa["edit"]["changes"][uri])
    assert silenced == add_noqa(example.code, lint_text(example.code, str(path), Config())).text
    assert "# noqa: JIT101" in silenced and lint_text(silenced, str(path), Config()) == []

    # Nothing to fix outside the finding's range, and no safe fix-all for an unsafe-only file.
    elsewhere = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": elsewhere, "context": {"diagnostics": []}}) == []
    assert client.close() == 0


SAFE = [(rule, example) for rule in RULES_BY_CODE.values() if rule.fix_applicability == "safe"
        for example in rule.invalid if example.fixed is not None]


@pytest.mark.skipif(not SAFE, reason="no rule has a safe fix yet")
def test_fix_all_source_action_matches_fix(client, tmp_path):
    rule, example = SAFE[0]
    path = tmp_path / "model.py"
    uri = _open(client, path, example.code)
    client.diagnostics(uri)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": len(example.code.splitlines()), "character": 0}}
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole,
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    [action] = actions
    assert action["kind"] == "source.fixAll.compile-lint"
    assert _apply(example.code, action["edit"]["changes"][uri]) == example.fixed
    assert client.close() == 0


def test_syntax_errors_are_reported_not_fatal(client, tmp_path):
    uri = _open(client, tmp_path / "broken.py", "import torch\ndef f(:\n")
    [finding] = client.diagnostics(uri)["diagnostics"]
    assert finding["code"] == "JIT000"
    assert finding["severity"] == 1
    uri = _open(client, tmp_path / "ok.py", Path(FIXTURE).read_text())
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["JIT101"]
    assert client.close() == 0


def test_the_server_honours_the_mode_setting(client, tmp_path):
    # The client was started in tmp_path; the config is read when the document is first linted.
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nmode = "inference"\n')
    source = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
              "        if self.training and x.sum() > 0:\n            x = -x\n"
              "        if not self.training and x.mean() > 0:\n            x = x * 2\n        return x\n")
    uri = _open(client, tmp_path / "modes.py", source)
    findings = client.diagnostics(uri)["diagnostics"]
    assert [(d["code"], d["range"]["start"]["line"]) for d in findings] == [("JIT101", 8)]
    assert findings[0]["message"].endswith("(only when not self.training)")
    assert client.close() == 0
