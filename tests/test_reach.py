"""Reach: code torch.compile traces in other files of the project is linted as traced code.

Every project here is checked against the real compiler (torch, backend="eager"): a
finding's line is the innermost frame of Dynamo's user stack under `fullgraph=True`, and
each look-alike compiles cleanly.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import sys
import textwrap

import pytest

from compile_lint.analysis.project.summariser import summarise_source
from compile_lint.engine.api import ProjectIndex
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config
from tests.helpers import assert_findings_json, run_cli, write_tree

torch = pytest.importorskip("torch")

COMMONS = """
import torch


def gelu_tanh(x):
    if x.sum() > 0:
        return x
    return torch.tanh(x)


def scale(x, times):
    if times > 2:
        return x * times
    return x


def eager_report(x):
    print(x.shape)
    return x


@torch.compiler.disable
def logged(x):
    print("logged")
    return x


def only_eager(x):
    print("eager only")
    return x


def branch_true(x):
    print("true branch")
    return x.sin()


def branch_false(x):
    return x.cos()
"""

HEADS = """
import torch
from torch import nn


class Head(nn.Module):
    def forward(self, x):
        return x * 2

    def loss(self, x):
        return x.mean() + x.sum().tolist()


class Search:
    def __init__(self, model):
        self.model = model

    def run(self, x):
        if x.max() > 1:
            return x
        return self.model(x)
"""

MODEL = """
import torch
from torch import nn

from . import commons
from .commons import scale, logged, only_eager
from .heads import Head, Search


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        act_fn = commons.gelu_tanh
        y = act_fn(x)
        return self.head.loss(y)

    def infer(self, x):
        return Search(self.head).run(x)


class Clean(nn.Module):
    def forward(self, x):
        y = scale(x, 2)
        if not torch.compiler.is_compiling():
            y = only_eager(y)
        return y


class Logged(nn.Module):
    def forward(self, x):
        return logged(x) + 1


class Branchy(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, commons.branch_true, commons.branch_false, (x,))


def report(x):
    return commons.eager_report(x)


def compile_infer(model):
    model.infer = torch.compile(model.infer)
    return model
"""

# (file, line, code) of every finding in the project, as the compiler places them.
EXPECTED = [
    ("pkg/commons.py", 5, "JIT101"),   # gelu_tanh's `if`, reached through the local alias
    ("pkg/commons.py", 33, "JIT601"),  # branch_true's print, a torch.cond branch
    ("pkg/heads.py", 10, "JIT203"),    # Head.loss, a submodule's other method
    ("pkg/heads.py", 18, "JIT101"),    # Search.run, from the compiled Net.infer
    ("pkg/model.py", 33, "JIT611"),    # the call of the disabled helper: an intended break (off by default)
]


@pytest.fixture
def project(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": "[tool.compile-lint]\nselect = [\"ALL\"]\n",
        "pkg/__init__.py": "",
        "pkg/commons.py": COMMONS,
        "pkg/heads.py": HEADS,
        "pkg/model.py": MODEL,
    })
    return tmp_path


def _imported(root, name: str):
    sys.path.insert(0, str(root))
    try:
        for loaded in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[loaded]
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(root))


def _break_frame(function, *args) -> tuple[str, int]:
    """(file name, line) of the innermost user frame where `fullgraph=True` fails."""
    torch._dynamo.reset()
    with pytest.raises(Exception) as caught:
        torch.compile(function, backend="eager", fullgraph=True)(*args)
    frames = getattr(caught.value, "real_stack", None) or []
    assert frames, f"no user stack on {caught.value!r}"
    return os.path.basename(frames[-1].filename), frames[-1].lineno


def _compiles(function, *args) -> None:
    torch._dynamo.reset()
    torch.compile(function, backend="eager", fullgraph=True)(*args)


def test_the_compiler_breaks_where_the_findings_are_and_nowhere_else(project):
    model = _imported(project, "pkg.model")
    x = torch.randn(4)
    net = model.Net()
    assert _break_frame(net, x) == ("commons.py", 5)
    assert _break_frame(lambda x: net.head.loss(x), x) == ("heads.py", 10)
    assert _break_frame(net.infer, x) == ("heads.py", 18)
    assert _break_frame(model.Branchy(), x) == ("commons.py", 33)
    # The look-alikes: a literal size (times=2) and an eager-only branch compile cleanly;
    # the disabled helper is an intended break at its call, never inside it.
    _compiles(model.Clean(), x)
    assert _break_frame(model.Logged(), x) == ("model.py", 33)


def test_the_cli_reports_helpers_once_in_their_own_files_with_the_chain(project):
    completed = run_cli("--output-format", "json", "pkg", cwd=project)
    findings = assert_findings_json(completed.stdout)
    assert [(f["path"], f["line"], f["code"]) for f in findings] == EXPECTED
    by_line = {(f["path"], f["line"]): f for f in findings}
    alias = by_line[("pkg/commons.py", 5)]
    assert alias["reached_from"] == [{"path": "pkg/model.py", "line": 16, "function": "Net.forward"}]
    # Named as the report names files (relative to the cwd), not by its base name (issue 35 item 6).
    assert alias["message"].endswith("(reached from pkg/model.py:16 in Net.forward)")
    infer = by_line[("pkg/heads.py", 18)]
    assert infer["reached_from"] == [{"path": "pkg/model.py", "line": 20, "function": "Net.infer"}]
    # The torch.cond branch is traced from the forward that calls torch.cond.
    assert by_line[("pkg/commons.py", 33)]["reached_from"] == [
        {"path": "pkg/model.py", "line": 38, "function": "Branchy.forward"}]


@pytest.mark.slow
def test_single_files_and_the_library_api_give_the_same_answer(project):
    whole = json.loads(run_cli("--output-format", "json", "pkg", cwd=project).stdout)
    for relative in ("pkg/commons.py", "pkg/heads.py", "pkg/model.py"):
        alone = json.loads(run_cli("--output-format", "json", "--no-cache", relative, cwd=project).stdout)
        assert alone == [f for f in whole if f["path"] == relative]
        path = str(project / relative)
        config = Config(select=("ALL",), root=str(project), source=str(project / "pyproject.toml"))
        lines = [(d.line, d.code) for d in lint_text((project / relative).read_text(), path, config,
                                                     project=ProjectIndex())]
        assert lines == [(f["line"], f["code"]) for f in whole if f["path"] == relative]


def test_the_library_api_reads_the_project_only_when_given_one(project, monkeypatch):
    # From inside the package, a file is part of it; still, without a ProjectIndex a lint reads
    # no other file of the package, so the helper only Net.forward reaches is not traced code.
    from compile_lint.engine.api import lint_source

    monkeypatch.chdir(project / "pkg")
    text = (project / "pkg" / "commons.py").read_text()
    alone = lint_source(text, "commons.py", Config(select=("ALL",)))
    assert (5, "JIT101") not in [(d.line, d.code) for d in alone.diagnostics]
    reached = lint_source(text, "commons.py", Config(select=("ALL",)), project=ProjectIndex())
    assert (5, "JIT101") in [(d.line, d.code) for d in reached.diagnostics]
    assert not (project / "pkg" / ".compile-lint-cache").exists()  # no config file: the index is kept nowhere


def test_editing_a_caller_relints_the_helper(project):
    first = json.loads(run_cli("--output-format", "json", "pkg/commons.py", cwd=project).stdout)
    assert (5, "JIT101") in [(f["line"], f["code"]) for f in first]
    model = project / "pkg/model.py"
    model.write_text(model.read_text().replace("y = act_fn(x)", "y = x"))
    second = json.loads(run_cli("--output-format", "json", "pkg/commons.py", cwd=project).stdout)
    assert (5, "JIT101") not in [(f["line"], f["code"]) for f in second]
    assert os.path.isdir(project / ".compile-lint-cache")


def test_entry_points_setting_and_its_errors(project):
    (project / "pkg/tools.py").write_text(textwrap.dedent("""
        def step(x):
            print(x)
            return x
        """).lstrip("\n"))
    (project / "pyproject.toml").write_text(
        "[tool.compile-lint]\nselect = [\"ALL\"]\nentry-points = [\"pkg/tools.py:step\"]\n")
    findings = json.loads(run_cli("--output-format", "json", "pkg/tools.py", cwd=project).stdout)
    assert [(f["line"], f["code"]) for f in findings] == [(2, "JIT601")]
    torch._dynamo.reset()
    tools = _imported(project, "pkg.tools")
    assert _break_frame(tools.step, torch.randn(2)) == ("tools.py", 2)
    shown = run_cli("--show-settings", cwd=project)
    assert 'entry-points = ["pkg/tools.py:step"]' in shown.stdout
    missing = run_cli("--config", 'entry-points = ["pkg/tools.py:nothing"]', "pkg", cwd=project)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "defines no function nothing" in missing.stderr


def test_a_parameter_of_a_reached_helper_is_no_tensor_without_its_callers(tmp_path):
    # `times` is passed a literal: a Python value, so `if times > 2` compiles (no finding);
    # `flag` is passed an attribute nothing knows: unknown, no finding either.
    write_tree(tmp_path, {
        "util.py": """
            def scale(x, times):
                if times > 2:
                    return x * times
                return x

            def gate(x, flag):
                if flag:
                    return x
                return -x
            """,
        "model.py": """
            import torch
            from util import scale, gate

            class Net(torch.nn.Module):
                use = True

                def forward(self, x):
                    return gate(scale(x, 3), self.use)
            """,
    })
    assert run_cli("--select", "ALL", "--no-cache", ".", cwd=tmp_path).stdout.startswith("All checks passed")
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop("model", None)
        sys.modules.pop("util", None)
        model = importlib.import_module("model")
        _compiles(model.Net(), torch.randn(3))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("model", None)
        sys.modules.pop("util", None)


def test_the_index_summarises_with_ast_and_records_eager_branches():
    source = textwrap.dedent("""
        import torch
        from .commons import f as g

        def step(x):
            h = g
            if not torch.compiler.is_compiling():
                print(x)
            return h(x)
        """).encode()
    summary = summarise_source("m.py", source)
    step = summary.functions["step"]
    assert summary.imports["g"] == ".commons.f"
    assert step.aliases["h"] == ("g",)
    assert [(c.callee, c.eager) for c in step.calls if c.callee in ("print", "h")] == [("print", True), ("h", False)]


@pytest.mark.slow
def test_flake8_and_the_language_server_agree_with_the_cli(project):
    import subprocess

    from lsp_client import LspClient

    whole = json.loads(run_cli("--output-format", "json", "pkg", cwd=project).stdout)
    expected = sorted((f["path"], f["line"], f["code"]) for f in whole)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "JIT", "pkg"], cwd=project,
                            capture_output=True, text=True, timeout=300)
    reported = []
    for line in flake8.stdout.splitlines():
        path, number, _, rest = line.split(":", 3)
        reported.append((path.replace(os.sep, "/").removeprefix("./"), int(number), rest.split()[0]))
    # flake8 owns the selection: JIT611 (off by default) is not in its `--select JIT`.
    assert sorted(reported) == [item for item in expected if item[2] != "JIT611"]

    pytest.importorskip("pygls")
    client = LspClient(str(project))
    try:
        client.initialize(project.as_uri())
        for relative in ("pkg/commons.py", "pkg/heads.py"):
            path = project / relative
            uri = path.as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}})
            # The server publishes the file's own findings first, then, when they differ, those
            # with the project's reach: the last publish is the answer, and it is the CLI's.
            wanted = [item[1:] for item in expected if item[0] == relative]
            seen = []
            while not seen or seen[-1] != wanted:
                seen.append(sorted((d["range"]["start"]["line"] + 1, d["code"])
                                   for d in client.diagnostics(uri)["diagnostics"]))
            assert len(seen) <= 2, seen
            with pytest.raises(queue.Empty):
                client.diagnostics(uri, timeout=2)  # and nothing after it
        # Saving a caller that no longer reaches the helper re-publishes the helper's findings.
        model = project / "pkg/model.py"
        text = model.read_text().replace("y = act_fn(x)", "y = x")
        model.write_text(text)
        model_uri = model.as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": model_uri, "languageId": "python", "version": 1, "text": text}})
        client.notify("textDocument/didSave", {"textDocument": {"uri": model_uri}})
        commons_uri = (project / "pkg/commons.py").as_uri()
        republished = client.diagnostics(commons_uri)["diagnostics"]
        assert [(d["range"]["start"]["line"] + 1, d["code"]) for d in republished] == [(33, "JIT601")]
        assert client.close() == 0
    finally:
        client.kill()


def test_a_fix_for_a_reached_helper_edits_the_helpers_file_once(project):
    model_before = (project / "pkg/model.py").read_text()
    fixed = run_cli("--fix", "--unsafe-fixes", "pkg", cwd=project)
    assert fixed.returncode in (0, 1), fixed.stderr
    commons = (project / "pkg/commons.py").read_text()
    assert commons.count("torch.where(x.sum() > 0, x, torch.tanh(x))") == 1
    assert (project / "pkg/model.py").read_text() == model_before
    again = json.loads(run_cli("--output-format", "json", "--no-cache", "pkg", cwd=project).stdout)
    assert ("pkg/commons.py", 5) not in [(f["path"], f["line"]) for f in again]
    # The fixed helper compiles where the finding was.
    commons_module = _imported(project, "pkg.commons")
    _compiles(commons_module.gelu_tanh, torch.randn(4))


def test_an_unchanged_project_is_answered_from_the_stored_traced_set(project, tmp_path_factory):
    from compile_lint.analysis.project import reach as reach_module
    from compile_lint.analysis.project.symbols import SymbolIndex

    cache = tmp_path_factory.mktemp("index-cache")
    files = [str(project / "pkg" / name) for name in ("__init__.py", "commons.py", "heads.py", "model.py")]

    def fresh_answer():
        reach_module._MEMOS.clear()  # a new process: only the disk cache is left
        found = reach_module.project_reach(str(project), True, SymbolIndex([str(project)]), cache_dir=str(cache))
        return found, {path: (found.for_file(path).functions, found.for_file(path).digest) for path in files}

    built, built_files = fresh_answer()
    stored, stored_files = fresh_answer()
    assert isinstance(built, reach_module.ProjectReach) and isinstance(stored, reach_module.StoredReach)
    assert stored_files == built_files and stored.reached == frozenset(built.reached)
    assert stored.for_file(files[1]).reaches(files[1], "gelu_tanh")
    model = project / "pkg/model.py"
    model.write_text(model.read_text().replace("y = act_fn(x)", "y = x"))
    rebuilt, rebuilt_files = fresh_answer()
    assert isinstance(rebuilt, reach_module.ProjectReach) and rebuilt_files != built_files
    reach_module._MEMOS.clear()
