"""Breaks inside installed libraries, reported at the user's call (issue 30), calibrated on a fixture.

tests/fixtures/library_reach/ holds a user project (`project/`) and the folder a library is
installed in (`site/`: the pure-Python `fakesolver` with its `.dist-info`, as pip lays it
out; an extension module `fastlib` without source is added to a copy by the tests). The
user's lines that call into a breaking library function declare it:

    return solve(field, y)  # expect: JIT101 inside fakesolver/_impl/steps.py:7

Part A (the compiler is the judge): every entry of `project/entry.py` runs under the default
torch.compile (backend "eager") with `site/` on the path (tests/library_probe.py); each break
Dynamo reports must have the declared library line as its innermost frame and the declared
user line in its user stack, and the look-alike entries (a fixed-step solve, a quiet method,
a layer that uses torch.where) must compile with fullgraph=True.

Part B (compile-lint agrees): the CLI (JSON, validated against docs/findings.schema.json,
and text), flake8 and the language server report exactly the declared findings at the
user's lines, each with `inside` naming the library's line; `--show-library-findings` lists
the library's own sites, never counted as the user's; the library summaries are cached
outside the installed folder.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import assert_findings_json

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "library_reach"
PROBE = HERE / "library_probe.py"
_MARKER = re.compile(r"#\s*expect:\s*(?P<code>JIT\d+) inside (?P<path>[\w/.]+\.py):(?P<line>\d+)\s*$")


@functools.lru_cache(maxsize=None)
def expected() -> dict[tuple[str, int], tuple[str, str, int]]:
    """(user file, line) -> (code, library path as the package spells it, library line), from the markers."""
    found = {}
    for path in sorted((FIXTURE / "project").glob("*.py")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _MARKER.search(text)
            if match:
                found[(path.name, number)] = (match["code"], match["path"], int(match["line"]))
    return found


def test_the_fixture_declares_breaks_in_the_library():
    assert len(expected()) >= 4
    assert {code for code, _, _ in expected().values()} >= {"JIT101", "JIT201", "JIT601"}


# ---------------------------------------------------------------- part A: the compiler's verdict


@functools.lru_cache(maxsize=None)
def compiled() -> dict:
    """What Dynamo did with each entry of the fixture project (one subprocess), the installed folder on the path."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(FIXTURE / "site"))
    result = subprocess.run([sys.executable, str(PROBE), str(FIXTURE / "project")], cwd=FIXTURE / "project",
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1])


def entry_lines(name: str) -> tuple[str, range]:
    """The user file and the lines of the function an entry compiles (`train.py:integrate`, `model.py:Net.forward`)."""
    file, _, qualname = name.partition(":")
    scope = ast.parse((FIXTURE / "project" / file).read_text(encoding="utf-8"))
    for part in qualname.split("."):
        scope = next(node for node in scope.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))
                     and node.name == part)
    return file, range(scope.lineno, scope.end_lineno + 1)


@pytest.mark.slow
def test_dynamo_breaks_inside_the_library_at_the_declared_sites():
    """Each break's innermost frame is the library line declared in the compiled function, and each
    declared line is such a break. (Dynamo's user stack of a break in a nested module or method call
    may start at that call's own frame, so the entry says which user function it is.)"""
    site = FIXTURE / "site"
    observed = set()
    for name, entry in compiled().items():
        assert entry["compile_error"] is None, (name, entry["compile_error"])
        file, lines = entry_lines(name)
        declared = {(library_path, library_line): (file, line) for (marked, line), (_, library_path, library_line)
                    in expected().items() if marked == file and line in lines}
        for found in entry["breaks"]:
            library_path, library_line = found["stack"][-1]
            inner = (Path(library_path).relative_to(site).as_posix(), library_line)
            assert inner in declared, f"{name}: Dynamo breaks at {inner}; declared {declared}"
            observed.add(declared[inner])
    assert observed == set(expected())


@pytest.mark.slow
def test_look_alike_entries_compile_with_fullgraph():
    clean = [name for name, entry in compiled().items() if entry["fullgraph"]]
    assert len(clean) >= 3, clean
    for name in clean:
        entry = compiled()[name]
        assert not entry["breaks"] and entry["fullgraph_error"] is None, (name, entry)


# ---------------------------------------------------------------- part B: compile-lint agrees


@pytest.fixture
def installed(tmp_path):
    """A copy of the fixture (the linters may write caches into the project), with an extension module
    `fastlib` (no source) in the installed folder; returns (project, site, environment)."""
    shutil.copytree(FIXTURE, tmp_path / "fixture", ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "fixture" / "site"
    (site / "fastlib.so").write_bytes(b"")  # found by the import system's finders, never loaded
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(tmp_path / "user-cache"))
    return tmp_path / "fixture" / "project", site, env


def _cli(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compile_lint", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def _listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def _assert_user_findings(findings: list[dict], site: Path) -> None:
    own = [finding for finding in findings if "library" not in finding]
    assert {(Path(f["path"]).name, f["line"]) for f in own} == set(expected())
    for finding in own:
        code, library_path, library_line = expected()[(Path(finding["path"]).name, finding["line"])]
        inside = finding["inside"]
        assert finding["code"] == inside["code"] == code, finding
        assert (inside["package_path"], inside["line"]) == (library_path, library_line), finding
        assert Path(inside["path"]) == site / library_path
        assert (inside["package"], inside["version"]) == ("fakesolver", "1.0.0")
        assert f"inside fakesolver 1.0.0, at {library_path}:{library_line}" in finding["message"]
        assert finding["kind"] == "break" and "reached_from" not in finding


def test_cli_json_reports_each_break_at_the_users_call(installed):
    project, site, env = installed
    before = _listing(site)
    result = _cli(project, env, "--output-format", "json", ".")
    assert result.returncode == 1, result.stderr
    _assert_user_findings(assert_findings_json(result.stdout), site)
    # Nothing is written inside the installed folder: the library's files are only read (parsed on demand
    # by the program model; a parse costs less than loading a stored tree, so none is kept).
    assert _listing(site) == before
    warm = _cli(project, env, "--output-format", "json", ".")
    assert json.loads(warm.stdout) == json.loads(result.stdout)
    # The library changes (a new release, an edit): the cached answers do not outlive it.
    steps = site / "fakesolver" / "_impl" / "steps.py"
    steps.write_text(steps.read_text(encoding="utf-8").replace('print("norm", y.norm())', "return y.norm()"),
                     encoding="utf-8")
    edited = _cli(project, env, "--output-format", "json", ".")
    assert {f["code"] for f in json.loads(edited.stdout)} == {"JIT101", "JIT201"}, edited.stdout


def test_cli_text_names_the_library_line_and_notes_an_extension_once(installed):
    project, _, env = installed
    result = _cli(project, env, "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    for (file, line), (code, library_path, library_line) in expected().items():
        ours = [text for text in lines if text.startswith(f"{file}:{line}:")]
        assert len(ours) == 1 and f" {code} " in ours[0], (file, line, lines)
        assert f"at {library_path}:{library_line} in `" in ours[0] and "; not your code: " in ours[0]
    notes = [text for text in result.stderr.splitlines() if "fastlib has no Python source" in text]
    assert len(notes) == 1 and "ext.py:9" in notes[0], result.stderr


def test_cli_on_each_file_alone_agrees(installed):
    project, site, env = installed
    findings = []
    for file in sorted({file for file, _ in expected()}):
        result = _cli(project, env, "--no-cache", "--output-format", "json", file)
        assert result.returncode == 1, result.stderr
        findings += assert_findings_json(result.stdout)
    _assert_user_findings(findings, site)


def test_show_library_findings_lists_the_librarys_sites_apart(installed):
    project, site, env = installed
    result = _cli(project, env, "--no-cache", "--show-library-findings", "--output-format", "json", ".")
    assert result.returncode == 1, result.stderr
    findings = assert_findings_json(result.stdout)
    _assert_user_findings(findings, site)
    listed = {(Path(f["path"]).relative_to(site).as_posix(), f["line"], f["code"],
               tuple((link["path"], link["line"], link["function"]) for link in f["library"]["called_from"]))
              for f in findings if "library" in f}
    users = {(code, library_path, library_line): (file, line) for (file, line), (code, library_path, library_line)
             in expected().items()}
    assert {(path, line, code) for path, line, code, _ in listed} == {
        (library_path, library_line, code) for code, library_path, library_line in users}
    for path, line, code, called_from in listed:
        file, user_line = users[(code, path, line)]
        assert (file, user_line) in {(caller_file, caller_line) for caller_file, caller_line, _ in called_from}
    text = _cli(project, env, "--no-cache", "--show-library-findings", ".")
    assert f"Found {len(expected())} findings" in text.stdout
    assert f"Listed {len(listed)} findings inside installed libraries" in text.stdout


def test_without_the_library_on_the_path_nothing_is_reported(installed):
    project, _, env = installed
    result = _cli(project, dict(env, PYTHONPATH=""), "--no-cache", "--output-format", "json", ".")
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stdout


@pytest.mark.slow
def test_flake8_reports_the_users_lines(installed):
    project, _, env = installed
    found = set()
    for file in sorted({file for file, _ in expected()}):
        result = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "JIT", file],
                                cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode in (0, 1), result.stderr
        for text in result.stdout.splitlines():
            path, line, _, rest = text.split(":", 3)
            found.add((Path(path).name, int(line), rest.split()[0]))
            assert "breaks the graph inside fakesolver 1.0.0" in rest
    assert found == {(file, line, code) for (file, line), (code, _, _) in expected().items()}


def test_language_server_reports_the_users_lines(installed):
    pytest.importorskip("pygls")
    from lsp_client import LspClient

    project, _, env = installed
    client = LspClient(str(project), env=env)
    found = set()
    try:
        client.initialize(project.as_uri())
        for file in sorted({file for file, _ in expected()}):
            path = project / file
            uri = path.as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
            # The file's own findings come first, then, when they differ, those with the project's
            # reach (into the library): the last of at most two publishes is the server's answer.
            wanted = {(line, code) for (marked, line), (code, _, _) in expected().items() if marked == file}
            publishes: list[set] = []
            while not publishes or publishes[-1] != wanted:
                assert len(publishes) < 2, (file, publishes, wanted)
                diagnostics = client.diagnostics(uri, version=1)["diagnostics"]
                publishes.append({(d["range"]["start"]["line"] + 1, d["code"]) for d in diagnostics})
            found |= {(file, line, code) for line, code in publishes[-1]}
        assert client.close() == 0
    finally:
        client.kill()
    assert found == {(file, line, code) for (file, line), (code, _, _) in expected().items()}
