"""Cross-file reach (issue 23), calibrated on multi-file fixture projects like the rule examples are.

Each directory of tests/fixtures/reach/ is a small project laid out the way research code
is (a package with a model file and helper modules, an `entry.py` that builds the model and
lists what the user compiles, sometimes a training script and a `pyproject.toml`). Its
expected findings are declared in one place, on the lines themselves:

    if x.sum() > 0:  # expect: JIT101 (reached from pkg/model.py:12 in Net.forward)

codes, then (for code that only reach makes traced) the first link of the chain: the
entry point's file, the line of its call, and the entry point's qualified name: what the
finding's message must end with and what its JSON `reached_from[0]` must say.

Part A (the compiler is the judge): every entry point of a project runs under the default
torch.compile (backend "eager") in one subprocess per project (tests/reach_probe.py); the
break sites Dynamo reports (the innermost frame of the break's user stack inside the
project) must be exactly the declared lines, each declared chain must start with a call
that Dynamo followed from that line of that function, and the look-alike entries must
compile with fullgraph=True.

Part B (compile-lint agrees, on every frontend): the CLI on the project, the CLI on each
file alone, flake8 on each file and the language server must all report exactly the
declared findings.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.helpers import assert_findings_json, run_cli

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "reach"
PROBE = HERE / "reach_probe.py"
PROJECTS = sorted(path.name for path in FIXTURES.iterdir() if (path / "entry.py").is_file())

# Projects that call a library the dev extra does not install (`reach-run` does): where it is
# missing, every test of the project is skipped.
NEEDS_LIBRARY = {"einops_calls": "einops"}


def missing_library(project: str) -> Optional[str]:
    """The library a project needs that is not installed, or None."""
    library = NEEDS_LIBRARY.get(project)
    return library if library and importlib.util.find_spec(library) is None else None


def runnable(projects) -> list:
    """`projects` to parametrize with, those whose library is missing marked skipped."""
    return [pytest.param(project, marks=pytest.mark.skip(reason=f"{missing_library(project)} is not installed"))
            if missing_library(project) else project for project in projects]

_MARKER = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)"
                     r"(?:\s+\(reached from (?P<path>[^\s:]+):(?P<line>\d+) in (?P<function>[\w.]+)\))?\s*$")

@dataclass(frozen=True)
class Expected:
    """One declared finding site: its codes and, when reach makes it traced, the chain's first link."""

    path: str
    line: int
    codes: tuple[str, ...]
    reached_from: Optional[tuple[str, int, str]]


def python_files(root: Path) -> list[str]:
    """The project's Python files with content, relative to its root, with `/`."""
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*.py")
                  if "__pycache__" not in path.parts and path.read_text(encoding="utf-8").strip())


@functools.lru_cache(maxsize=None)
def expected(project: str) -> dict[tuple[str, int], Expected]:
    """The `# expect:` markers of a project, by (relative path, line)."""
    root = FIXTURES / project
    found = {}
    for relative in python_files(root):
        for number, text in enumerate((root / relative).read_text(encoding="utf-8").splitlines(), 1):
            if "expect:" not in text:
                continue
            marker = _MARKER.search(text)
            assert marker, f"{project}/{relative}:{number}: unreadable marker {text.strip()!r}"
            codes = tuple(code.strip() for code in marker["codes"].split(","))
            chain = (marker["path"], int(marker["line"]), marker["function"]) if marker["path"] else None
            found[(relative, number)] = Expected(relative, number, codes, chain)
    return found


def project_setting(project: str, key: str):
    """A [tool.compile-lint] setting of the project's pyproject.toml, or None."""
    path = FIXTURES / project / "pyproject.toml"
    if not path.is_file():
        return None
    with open(path, "rb") as handle:
        return tomllib.load(handle).get("tool", {}).get("compile-lint", {}).get(key)


def expected_findings(project: str) -> set[tuple[str, int, str]]:
    """(path, line, code) of every declared finding."""
    return {(site.path, site.line, code) for site in expected(project).values() for code in site.codes}


@functools.lru_cache(maxsize=None)
def compiled(project: str) -> dict:
    """What Dynamo did with each entry point of the project (one subprocess for all of them), and
    whether its training script ran: {"entries": {entry point: ...}, "scripts": {"train.py": error}}."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # nothing written into tests/fixtures
    result = subprocess.run([sys.executable, str(PROBE), str(FIXTURES / project)], cwd=FIXTURES / project,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1])


# ---------------------------------------------------------------- part A: the compiler's verdict


# Projects whose findings sit in code compiled directly, so none declares a chain: what each shows instead.
WITHOUT_CHAINS = {
    "lookalikes": "code that looks like a break and compiles",
    "masked_outputs": "mask indexing on values of unknown kind, in the forward methods themselves (JIT207)",
}


def test_every_project_declares_findings_and_look_alikes():
    assert len(PROJECTS) >= 8, PROJECTS
    for project in PROJECTS:
        if project not in WITHOUT_CHAINS:
            assert any(site.reached_from for site in expected(project).values()), project
        else:
            assert expected(project) or project == "lookalikes", project


@pytest.mark.slow
@pytest.mark.parametrize("project", runnable(PROJECTS))
def test_dynamo_breaks_exactly_at_the_declared_lines(project):
    report = compiled(project)
    assert report["entries"], project
    observed: dict[tuple[str, int], set[str]] = {}
    for name, entry in report["entries"].items():
        assert entry["eager_error"] is None or entry["eager_error_from_dynamo"], (name, entry["eager_error"])
        assert not entry["outside"], f"{name}: breaks outside the project: {entry['outside']}"
        for path, line, kind in entry["sites"]:
            observed.setdefault((path, line), set()).add(kind)
    declared = set(expected(project))
    assert set(observed) == declared, (
        f"Dynamo breaks at {sorted(observed.items())}; declared {sorted(declared)}; "
        f"missing {sorted(declared - set(observed))}, extra {sorted(set(observed) - declared)}")


@pytest.mark.slow
@pytest.mark.parametrize("project", runnable(p for p in PROJECTS if any(s.reached_from for s in expected(p).values())))
def test_each_declared_chain_starts_with_a_call_dynamo_followed(project):
    """`(reached from pkg/model.py:17 in Net.forward)`: Dynamo inlined a call on that line of that function."""
    followed = {(path, line, function) for entry in compiled(project)["entries"].values()
                for path, line, function, _ in entry["calls"]}
    for site in expected(project).values():
        if site.reached_from:
            assert site.reached_from in followed, (
                f"{site.path}:{site.line} declares {site.reached_from}; Dynamo followed calls from "
                f"{sorted(followed)}")


@pytest.mark.slow
def test_look_alike_entries_compile_with_fullgraph():
    """The look-alike paths (helpers only eager code calls, behind `is_compiling()`, ...) are clean."""
    clean = []
    for project in PROJECTS:
        if missing_library(project):
            continue
        for name, entry in compiled(project)["entries"].items():
            if entry.get("fullgraph"):
                assert entry["eager_error"] is None and not entry["sites"], (name, entry)
                assert entry["fullgraph_error"] is None, (name, entry["fullgraph_error"])
                clean.append(name)
    assert "det/model.py:Detector.forward" in clean and len(clean) >= 2, clean


@pytest.mark.slow
@pytest.mark.parametrize("project", runnable(p for p in PROJECTS if (FIXTURES / p / "train.py").is_file()))
def test_the_training_scripts_run_eagerly(project):
    """The eager-only look-alike helpers are really called: by a training step that runs."""
    assert compiled(project)["scripts"] == {"train.py": None}


# ------------------------------------------- the rules already know each break; only reach is missing


def inlined_into_forward(path: Path, line: int) -> tuple[str, int]:
    """The function holding `line` made the forward of a module alone in a file (with its file's
    imports), and where `line` lands there. A method keeps its class (its `__init__` says what
    `self.lin` is), renamed and rebased on nn.Module; a function becomes the forward of a new one."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    head = ["import torch", "from torch import nn"]
    head += [ast.get_source_segment(text, node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    head += ["", ""]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= node.end_lineno:
            body = lines[node.body[0].lineno - 1:node.end_lineno]
            holder = next(item for item in node.body if isinstance(item, ast.FunctionDef)
                          and item.lineno <= line <= item.end_lineno)
            offset = node.body[0].lineno
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in (holder.name, "forward"):
                    new = "forward" if item is holder else "original_forward"
                    row = item.lineno - offset
                    body[row] = body[row].replace(f"def {item.name}(", f"def {new}(", 1)
            head.append("class Inlined(nn.Module):")
            return "\n".join(head + body) + "\n", len(head) + line - offset + 1
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= node.end_lineno:
            parameters = ["self"] + [arg.arg for arg in node.args.args]
            offset = node.body[0].lineno
            body = textwrap.dedent("\n".join(lines[offset - 1:node.end_lineno]))
            head += ["class Inlined(nn.Module):", f"    def forward({', '.join(parameters)}):"]
            return "\n".join(head) + "\n" + textwrap.indent(body, " " * 8) + "\n", len(head) + line - offset + 1
    raise AssertionError(f"{path}:{line} is in no function")


# Projects whose breaks rest on a value the caller passes that a pasted helper cannot see
# (a disabled function passed in): what they need from compile-lint is more than reach.
_FROM_CALLERS_ONLY = {"disabled_values"}
REACHED = [(project, site) for project in PROJECTS if project not in _FROM_CALLERS_ONLY
           for site in expected(project).values() if site.reached_from]


@pytest.mark.parametrize("case", REACHED, ids=[f"{p}:{s.path}:{s.line}" for p, s in REACHED])
def test_the_rules_flag_each_reached_break_once_it_sits_in_forward(case):
    """Pasted into the forward of a single file, the helper's breaking line gets its declared codes
    from today's rules (default config): what the fixtures need from reach is reach alone."""
    from compile_lint.engine.lint import lint_text
    from compile_lint.settings.config import Config

    project, site = case
    code, line = inlined_into_forward(FIXTURES / project / site.path, site.line)
    flagged = {d.code for d in lint_text(code, "inlined.py", Config()) if d.line == line}
    assert set(site.codes) <= flagged, f"line {line} of\n{code}\nflagged {sorted(flagged)}"


# ---------------------------------------------------------------- part B: compile-lint agrees


@pytest.fixture
def copy_of(tmp_path):
    """A copy of a fixture project in the session's temp dir: the linters may write caches there."""
    def make(project: str) -> Path:
        target = tmp_path / project
        shutil.copytree(FIXTURES / project, target, ignore=shutil.ignore_patterns("__pycache__"))
        return target
    return make


def _relative(root: Path, path: str) -> str:
    absolute = Path(path) if os.path.isabs(path) else root / path
    return Path(os.path.normpath(absolute)).relative_to(root).as_posix()


def _json_findings(root: Path, *args: str) -> list[dict]:
    result = run_cli("--output-format", "json", *args, cwd=root)
    assert result.returncode in (0, 1), result.stderr
    findings = assert_findings_json(result.stdout)
    for finding in findings:
        finding["path"] = _relative(root, finding["path"])
    return findings


def _check_chains(project: str, root: Path, findings: list[dict]) -> None:
    """A finding that only reach makes traced names its chain, in JSON and at the end of its message."""
    for finding in findings:
        site = expected(project).get((finding["path"], finding["line"]))
        if site is None or site.reached_from is None:
            continue
        path, line, function = site.reached_from
        chain = finding.get("reached_from") or []
        assert chain, f"{finding['path']}:{finding['line']} {finding['code']}: no reached_from"
        first = chain[0]
        assert (_relative(root, first["path"]), first["line"], first["function"]) == (path, line, function), (
            finding, site)
        # The message names the entry point's file as JSON does (relative to the cwd), not by its base name.
        ending = f"(reached from {first['path']}:{line} in {function})"
        assert finding["message"].endswith(ending), (finding["message"], ending)


def _findings_set(findings) -> set[tuple[str, int, str]]:
    return {(finding["path"], finding["line"], finding["code"]) for finding in findings}


@pytest.mark.parametrize("project", runnable(PROJECTS))
def test_cli_on_the_project(project, copy_of):
    root = copy_of(project)
    findings = _json_findings(root, str(root))
    assert _findings_set(findings) == expected_findings(project)
    _check_chains(project, root, findings)


@pytest.mark.slow
@pytest.mark.parametrize("project", runnable(PROJECTS))
def test_cli_on_each_file_alone(project, copy_of):
    root = copy_of(project)
    findings = []
    for relative in python_files(root):
        findings += _json_findings(root, relative)
    assert _findings_set(findings) == expected_findings(project)
    _check_chains(project, root, findings)


_FLAKE8_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<column>\d+): (?P<code>[A-Z]+\d+) ")


@pytest.mark.slow
@pytest.mark.parametrize("project", runnable(PROJECTS))
def test_flake8_on_each_file(project, copy_of):
    root = copy_of(project)
    # flake8 owns the selection: a flake8 user turns on what the project's [tool.compile-lint]
    # turns on by default-off rules (JIT611 in lookalikes/) with flake8's own option.
    command = [sys.executable, "-m", "flake8", "--isolated", "--select", "JIT"]
    extra = project_setting(project, "extend-select")
    if extra:
        command.append("--extend-select=" + ",".join(extra))
    found = set()
    for relative in python_files(root):
        result = subprocess.run(command + [relative], cwd=root, capture_output=True, text=True, timeout=300)
        assert result.returncode in (0, 1), result.stderr
        for text in result.stdout.splitlines():
            match = _FLAKE8_LINE.match(text)
            assert match, text
            found.add((_relative(root, match["path"]), int(match["line"]), match["code"]))
    assert found == expected_findings(project)


@pytest.mark.parametrize("project", runnable(PROJECTS))
def test_language_server_on_each_file(project, copy_of):
    pytest.importorskip("pygls")
    from lsp_client import LspClient

    root = copy_of(project)
    client = LspClient(str(root))
    expected = expected_findings(project)
    found: set = set()
    try:
        client.initialize(root.as_uri())
        for relative in python_files(root):
            path = root / relative
            uri = path.as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
            # The file's own findings come first, then, when they differ, those with the
            # project's reach: the last of at most two publishes is the server's answer.
            wanted = {(line, code) for path, line, code in expected if path == relative}
            publishes: list[set] = []
            while not publishes or publishes[-1] != wanted:
                assert len(publishes) < 2, (relative, publishes, wanted)
                publishes.append({(d["range"]["start"]["line"] + 1, d["code"])
                                  for d in client.diagnostics(uri, version=1)["diagnostics"]})
            found |= {(relative, line, code) for line, code in publishes[-1]}
        assert client.close() == 0
    finally:
        client.kill()
    assert found == expected


# Files whose findings rest only on what their own imports name: a model file whose forward calls its
# package's helpers (`allowed`: a helper registered with allow_in_graph that reads `.item()`, reported at
# the call; `rebound`, `split_helpers`: helpers whose return kinds decide the file's own kinds).
ALONE_AGREES = {"allowed": "vit/model.py", "rebound": "tts/model.py", "split_helpers": "vocoder/model.py"}


@pytest.mark.parametrize("project", sorted(ALONE_AGREES))
def test_lint_source_without_a_project_agrees_with_the_cli_on_a_file_that_rests_on_its_imports(project, copy_of):
    """Linted alone (no project index), the file's program model reads what its imports name and answers
    its calls of other files' helpers as the project's model does."""

    from compile_lint.analysis.project.reach import file_alone
    from compile_lint.engine.project import symbol_index
    from compile_lint.engine.single_file import lint_source
    from compile_lint.settings.config import load_config

    root = copy_of(project)
    relative = ALONE_AGREES[project]
    path = root / relative
    text = path.read_text(encoding="utf-8")
    config = load_config(start=str(root))
    # The model of the file alone answers its calls of the helpers (their values, not a re-reading).
    assert file_alone(str(path), text, symbol_index(config).modules).calls
    alone = lint_source(text, str(path), config)
    on_project = {(finding["line"], finding["code"]) for finding in _json_findings(root, str(root))
                  if finding["path"] == relative}
    assert {(finding.line, finding.code) for finding in alone.diagnostics} == on_project
