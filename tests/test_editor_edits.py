"""The language server's edits: linted with the project's stored answer moved to the buffer's lines, and
the diagnostics they settle on are those a fresh lint of the saved file gives (issue 41 item 1)."""

from __future__ import annotations

import os
import queue
import time
from pathlib import Path

import psutil
import pytest

from compile_lint.analysis.project.reach import FileReach, Link, Reached
from compile_lint.engine.api import ProjectIndex
from compile_lint.engine.buffer_reach import LineMap, moved_reach, outline
from compile_lint.engine.lint import lint_text
from compile_lint.frontends.server import BODY_PAUSE_SECONDS
from compile_lint.settings.config import load_config
from lsp_client import LspClient

HELPERS = "import torch\n\n\ndef gate(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"
MODEL = ("import torch\nfrom torch import nn\n\nfrom . import helpers\n\n\n"
         "class Net(nn.Module):\n    def forward(self, x):\n        y = x * 2\n        return y\n")
# The server is settled once it has no build under way, no build is due, and it published nothing for this long.
QUIET_SECONDS = 1.0


@pytest.fixture
def client(tmp_path):
    lsp = LspClient(str(tmp_path))
    lsp.initialize(tmp_path.as_uri())
    yield lsp
    lsp.kill()


@pytest.fixture
def package(tmp_path) -> Path:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text(HELPERS)
    (folder / "model.py").write_text(MODEL)
    return folder


def _open(client, path: Path) -> str:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}})
    return uri


def _change(client, uri: str, version: int, text: str) -> None:
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


def _settled(client, published: dict[str, tuple]) -> dict[str, tuple]:
    """`published` (uri -> (version, diagnostics)) updated with what the server publishes until it settles."""
    server = psutil.Process(client.process.pid)
    due = time.monotonic() + BODY_PAUSE_SECONDS + QUIET_SECONDS  # a build asked for meanwhile has started
    while True:
        try:
            _, message = client.messages.get(timeout=QUIET_SECONDS)
        except queue.Empty:
            if published and time.monotonic() > due and not server.children():
                return published
            continue
        due = time.monotonic() + BODY_PAUSE_SECONDS + QUIET_SECONDS
        if message.get("method") == "textDocument/publishDiagnostics":
            params = message["params"]
            published[params["uri"]] = (params.get("version"), params["diagnostics"])


def _findings(diagnostics: list[dict]) -> list[tuple]:
    return [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"])
            for d in diagnostics]


def _fresh_lint(path: Path, text: str) -> list[tuple]:
    """The file saved with `text`, linted afresh with its project (nothing kept from before)."""
    path.write_text(text)
    config = load_config(start=str(path.parent))
    return [(d.code, d.line - 1, d.column - 1, d.message)
            for d in lint_text(text, str(path), config, project=ProjectIndex(keep=False))]


def _cwd(path: Path):
    """Findings name files relative to the working directory: the server's is the package's parent."""
    class Within:
        def __enter__(self):
            self.before = os.getcwd()
            os.chdir(path)

        def __exit__(self, *exc):
            os.chdir(self.before)
    return Within()


@pytest.mark.parametrize("edited", [
    # Inside a function body: a tensor branch, then a call that makes a helper of another file traced.
    MODEL.replace("        y = x * 2\n", "        y = x * 2\n        if y.sum() > 0:\n            y = y + 1\n"),
    MODEL.replace("        y = x * 2\n", "        y = helpers.gate(x)\n"),
    # What other code sees: the class's base (no longer an nn.Module), a new import and a signature.
    MODEL.replace("class Net(nn.Module):", "class Net:").replace("        y = x * 2\n",
                                                                   "        y = x * 2\n        print(y.item())\n"),
    MODEL.replace("import torch\n", "import math\nimport torch\n").replace(
        "def forward(self, x):", "def forward(self, x, scale=None):").replace(
        "        y = x * 2\n", "        y = x * 2\n        if y.max() > 1:\n            y = y / 2\n"),
], ids=["body-branch", "body-call", "class-base", "import-and-signature"])
def test_the_diagnostics_an_edit_settles_on_are_a_fresh_lint_of_the_saved_file(client, package, tmp_path, edited):
    model, helpers = package / "model.py", package / "helpers.py"
    model_uri, helpers_uri = _open(client, model), _open(client, helpers)
    published = _settled(client, {})
    _change(client, model_uri, 2, edited)
    published = _settled(client, published)
    assert published[model_uri][0] == 2
    with _cwd(tmp_path):
        assert _findings(published[model_uri][1]) == _fresh_lint(model, edited)
        # The helper's findings follow the unsaved caller too (a call of `gate` from a traced forward).
        assert _findings(published[helpers_uri][1]) == _fresh_lint(helpers, HELPERS)
    assert client.close() == 0


def test_an_edit_in_a_body_is_linted_at_once_with_the_stored_answer(client, package, tmp_path):
    model = package / "model.py"
    uri = _open(client, model)
    _settled(client, {})
    edited = MODEL.replace("        y = x * 2\n", "        # a comment\n        y = x * 2\n        print(y.item())\n")
    _change(client, uri, 2, edited)
    # The first diagnostics of the new version: already what a fresh lint of the saved file finds.
    first = client.diagnostics(uri, 2)["diagnostics"]
    with _cwd(tmp_path):
        assert _findings(first) == _fresh_lint(model, edited) != []
    assert client.close() == 0


def test_lines_of_a_stored_answer_move_past_an_edit():
    old = "a\nb\nc\nd\n"
    new = "a\nb\nnew\nnewer\nc\nd\n"
    lines = LineMap(old, new)
    assert [lines.start(line) for line in (1, 2, 3, 4)] == [1, 2, 5, 6]
    reach = FileReach("/p/m.py", {"f": Reached("f", (Link("/p/m.py", 3, "g"), Link("/p/o.py", 3, "h")), False,
                                               untraced=((3, 4),))}, "digest")
    moved = moved_reach(reach, old, new).functions["f"]
    assert moved.chain == (Link("/p/m.py", 5, "g"), Link("/p/o.py", 3, "h"))
    assert moved.untraced == ((5, 6),)
    assert moved_reach(reach, old, old) is reach


def test_the_outline_changes_with_what_other_code_sees_only():
    base = outline(MODEL)
    assert base is not None
    assert outline(MODEL.replace("y = x * 2", "y = x * 3\n        z = y")) == base
    assert outline("# a comment\n" + MODEL) == base
    assert outline(MODEL.replace("(self, x)", "(self, x, y=None)")) != base
    assert outline(MODEL.replace("(nn.Module)", "(object)")) != base
    assert outline("import os\n" + MODEL) != base
    assert outline(MODEL + "def (:\n") is None
