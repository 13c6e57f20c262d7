"""`compile-lint server`, driven over stdio with real LSP messages (JSON-RPC, Content-Length framing)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from compile_lint.core.diagnostics import Edit, Fix
from compile_lint.engine.api import ProjectIndex, fix_text
from compile_lint.engine.dispatch import LintCancelled
from compile_lint.engine.lint import lint_text
from compile_lint.engine.suppressions import add_noqa
from compile_lint.fixes.edits import apply_fixes
from compile_lint.frontends.lint_scheduler import LintScheduler, Snapshot
from compile_lint.rules import RULES_BY_CODE
from compile_lint.settings.config import Config
from lsp_client import TIMEOUT, LspClient

pytest.importorskip("pygls")

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ecosystem", "gated.py")


@pytest.fixture
def client(tmp_path):
    lsp = LspClient(str(tmp_path))
    result = lsp.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
    assert result["serverInfo"]["name"] == "compile-lint"
    assert result["capabilities"]["codeActionProvider"]
    lsp.notify("initialized", {})
    yield lsp
    lsp.kill()


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
    lines = [(d["code"], d["range"]["start"]["line"]) for d in published["diagnostics"]]
    assert lines == [("JIT101", 7), ("JIT102", 14)]
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


def _lsp_findings(diagnostics: list[dict]) -> list[tuple]:
    return [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in diagnostics]


def _cli_findings(text: str, path: Path) -> list[tuple]:
    return [(d.code, d.line - 1, d.column - 1) for d in lint_text(text, str(path), Config(), project=ProjectIndex())]


def test_a_burst_of_edits_is_debounced_and_its_last_version_published(client, tmp_path):
    path = tmp_path / "gated.py"
    text = Path(FIXTURE).read_text()
    uri = _open(client, path, text)
    client.diagnostics(uri, 1)
    # Ten keystrokes 10 ms apart (a burst: a key held down), typing a comment at the end of the `if` line.
    line = 7
    column = len(text.splitlines()[line])
    typed = "  # typing"
    for index, character in enumerate(typed):
        time.sleep(0.01)
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": index + 2}, "contentChanges": [{
                "range": {"start": {"line": line, "character": column + index},
                          "end": {"line": line, "character": column + index}},
                "text": character}]})
    last = len(typed) + 1
    versions: list = []

    def until_last(message: dict) -> bool:
        if message.get("method") != "textDocument/publishDiagnostics":
            return False
        versions.append(message["params"]["version"])
        return versions[-1] == last

    final = client.wait(until_last)["params"]
    # Debounced: not one lint per edit; the last version's diagnostics, as the CLI finds them.
    assert len(versions) < len(typed) // 2, versions
    assert versions == sorted(versions)
    lines = text.splitlines(True)
    lines[line] = lines[line].rstrip("\n") + typed + "\n"
    path.write_text("".join(lines))  # what the findings equal: a lint of the file saved
    assert _lsp_findings(final["diagnostics"]) == _cli_findings("".join(lines), path)
    assert client.close() == 0


def test_opening_a_file_other_code_reaches_publishes_its_own_findings_then_the_reached_ones(client, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    helpers = package / "helpers.py"
    helpers.write_text("import torch\n\n\ndef gate(x):\n    if x.sum() > 0:\n        return x\n    return -x\n")
    (package / "model.py").write_text("import torch\nfrom torch import nn\n\nfrom . import helpers\n\n\n"
                                      "class Net(nn.Module):\n    def forward(self, x):\n"
                                      "        return helpers.gate(x)\n")
    uri = _open(client, helpers, helpers.read_text())
    # First what the file holds on its own (nothing it traces itself), then with the project's reach.
    assert client.diagnostics(uri, 1)["diagnostics"] == []
    reached = client.diagnostics(uri, 1)["diagnostics"]
    assert _lsp_findings(reached) == _cli_findings(helpers.read_text(), helpers) == [("JIT101", 4, 7)]
    assert reached[0]["message"].endswith("(reached from pkg/model.py:9 in Net.forward)")
    assert client.close() == 0


def test_code_actions_answer_for_the_text_they_are_asked_about(client, tmp_path):
    example = RULES_BY_CODE["JIT101"].invalid[0]
    path = tmp_path / "model.py"
    uri = _open(client, path, example.code)
    client.diagnostics(uri, 1)
    # Edit, then ask at once: the answer waits for the lint of version 2, never the stale one.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "text": "# a new first line\n"}]})
    new_text = "# a new first line\n" + example.code
    [expected] = [d for d in lint_text(new_text, str(path), Config()) if d.fix is not None]
    where = {"start": {"line": expected.line - 1, "character": expected.column - 1},
             "end": {"line": expected.end_line - 1, "character": expected.end_column - 1}}
    action, noqa = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": where, "context": {"diagnostics": [], "only": ["quickfix"]}})
    assert _apply(new_text, action["edit"]["changes"][uri]) == "# a new first line\n" + example.fixed
    assert _apply(new_text, noqa["edit"]["changes"][uri]) == add_noqa(new_text, [expected]).text
    assert client.close() == 0


def _snapshot(text: str, version: int, path: str = "m.py") -> Snapshot:
    return Snapshot("file:///m.py", path, text, version, Config())


def test_a_running_lint_is_cancelled_when_a_newer_version_arrives():
    text = Path(FIXTURE).read_text()
    started, proceed = threading.Event(), threading.Event()
    outcomes: list = []
    delivered: list = []

    def lint(job, cancelled):
        started.set()
        proceed.wait(TIMEOUT)
        try:
            findings = lint_text(job.text, job.path, job.config, cancelled=cancelled)
        except LintCancelled:
            outcomes.append(("cancelled", job.version))
            raise
        outcomes.append(("finished", job.version))
        return findings

    scheduler = LintScheduler(lint, lambda job, findings: delivered.append((job.version, findings)))
    try:
        scheduler.submit(_snapshot(text, 1), edit=False)
        assert started.wait(TIMEOUT)
        scheduler.submit(_snapshot(text.replace("x * 2", "x * 3"), 2), edit=False)
        proceed.set()
        deadline = time.monotonic() + TIMEOUT
        while len(outcomes) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        scheduler.close()
    assert outcomes == [("cancelled", 1), ("finished", 2)]
    assert [version for version, _ in delivered] == [2]
    assert [d.code for d in delivered[0][1]] == ["JIT101"]


def test_a_lint_stops_at_the_next_function_once_cancelled_not_at_the_end_of_its_class():
    methods = "".join(f"    def helper_{index}(self, x):\n        return x\n" for index in range(5))
    text = ("import torch\n\n\nclass Net(torch.nn.Module):\n" + methods
            + "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n")
    asked: list = []

    def cancelled() -> bool:
        asked.append(True)
        # Asked after the parse, at the import, at the class, at helper_0; cancelled by helper_1.
        return len(asked) >= 5

    with pytest.raises(LintCancelled):
        lint_text(text, "m.py", Config(), cancelled=cancelled)
    assert len(asked) == 5


def test_edits_in_quick_succession_are_linted_once():
    text = Path(FIXTURE).read_text()
    linted: list = []
    delivered: list = []

    def lint(job, cancelled):
        linted.append(job.version)
        return lint_text(job.text, job.path, job.config, cancelled=cancelled)

    scheduler = LintScheduler(lint, lambda job, findings: delivered.append(job.version), debounce=0.5)
    try:
        for version in range(1, 11):  # 20 ms apart: all within the debounce after the first
            scheduler.submit(_snapshot(text + "#" * version, version))
            time.sleep(0.02)
        deadline = time.monotonic() + TIMEOUT
        while 10 not in delivered and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        scheduler.close()
    assert linted[0] == 1 and linted[-1] == 10  # the first edit at once, then the last
    assert len(linted) <= 3, linted
    assert delivered[-1] == 10


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


def test_a_file_level_noqa_exempts_the_file_in_the_editor_too(client, tmp_path):
    # Issue 25.9: compile-lint's file-wide noqa comment (and flake8's) silences the whole file.
    text = Path(FIXTURE).read_text().replace("  # noqa: JIT102", "")
    uri = _open(client, tmp_path / "gated.py", "# compile-lint: noqa: JIT101\n" + text)
    assert [d["code"] for d in client.diagnostics(uri)["diagnostics"]] == ["JIT102"]
    other = _open(client, tmp_path / "other.py", "# flake8: noqa\n" + text)
    assert client.diagnostics(other)["diagnostics"] == []
    assert client.close() == 0
