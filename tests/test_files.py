"""File discovery: excludes, .gitignore, explicit files, missing paths, symlinks."""

import fnmatch
import os

import pytest

from compile_lint.engine.files import discover
from compile_lint.settings.config import Config
from compile_lint.settings.selection import path_matches_any
from tests.helpers import BREAKING_GATE, run_cli


def _tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _rel(root, found):
    return sorted(os.path.relpath(f, root) for f in found)


def test_python_files_sorted_and_default_excludes(tmp_path):
    _tree(tmp_path, {"b.py": "", "a/c.pyi": "", "a/d.txt": "", ".venv/e.py": "", "build/f.py": ""})
    found = discover([str(tmp_path)], Config(root=str(tmp_path)))
    assert _rel(tmp_path, found) == ["a/c.pyi", "b.py"]


def test_gitignore_is_respected_with_negation_and_dir_rules(tmp_path):
    (tmp_path / ".git").mkdir()
    _tree(tmp_path, {
        ".gitignore": "gen/\n*_pb2.py\n!keep_pb2.py\n/top.py\n",
        "gen/x.py": "", "a_pb2.py": "", "keep_pb2.py": "", "top.py": "", "sub/top.py": "", "ok.py": "",
    })
    found = discover([str(tmp_path)], Config(root=str(tmp_path)))
    assert _rel(tmp_path, found) == ["keep_pb2.py", "ok.py", "sub/top.py"]
    unfiltered = discover([str(tmp_path)], Config(root=str(tmp_path), respect_gitignore=False))
    assert len(unfiltered) == 6


def test_gitignore_of_enclosing_repository_applies_to_subdirectory(tmp_path):
    (tmp_path / ".git").mkdir()
    _tree(tmp_path, {".gitignore": "skip_*.py\n", "src/skip_me.py": "", "src/keep.py": ""})
    found = discover([str(tmp_path / "src")], Config(root=str(tmp_path)))
    assert _rel(tmp_path, found) == ["src/keep.py"]


def test_exclude_and_explicit_files(tmp_path):
    _tree(tmp_path, {"third_party/x.py": "", "y.py": ""})
    config = Config(root=str(tmp_path), extend_exclude=("third_party",))
    assert _rel(tmp_path, discover([str(tmp_path)], config)) == ["y.py"]
    explicit = str(tmp_path / "third_party" / "x.py")
    assert discover([explicit], config) == [os.path.normpath(explicit)]


def test_missing_paths_are_reported_and_others_kept(tmp_path):
    _tree(tmp_path, {"y.py": ""})
    errors = []
    found = discover([str(tmp_path / "missing"), str(tmp_path)], Config(root=str(tmp_path)), errors)
    assert len(found) == 1
    assert errors == [f"{tmp_path / 'missing'}: no such file or directory"]


def test_symlink_loops_terminate(tmp_path):
    _tree(tmp_path, {"a/x.py": ""})
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    found = discover([str(tmp_path)], Config(root=str(tmp_path)))
    assert _rel(tmp_path, found) == ["a/x.py"]


def test_directory_links_found_while_walking_are_not_followed(tmp_path):
    _tree(tmp_path, {"a/x.py": "", "elsewhere/y.py": ""})
    os.symlink(tmp_path / "elsewhere", tmp_path / "a" / "linked")
    os.symlink(tmp_path / "elsewhere", tmp_path / "a" / "package.py")  # a directory, whatever its name
    assert _rel(tmp_path, discover([str(tmp_path / "a")], Config(root=str(tmp_path)))) == ["a/x.py"]
    # A link named on the command line is followed, as in ruff.
    assert _rel(tmp_path, discover([str(tmp_path / "a" / "linked")], Config(root=str(tmp_path)))) == ["a/linked/y.py"]


@pytest.fixture
def tree_with_a_link_to_its_parent(tmp_path):
    """proj/inside.py, and proj/up -> .. which leads to outside.py beside proj/."""
    (tmp_path / "outside.py").write_text(BREAKING_GATE)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "inside.py").write_text(BREAKING_GATE)
    os.symlink("..", tmp_path / "proj" / "up")
    return tmp_path


@pytest.mark.slow
def test_no_mode_reaches_outside_the_tree_through_a_directory_link(tree_with_a_link_to_its_parent):
    root = tree_with_a_link_to_its_parent
    lint = run_cli("--no-cache", "--output-format", "concise", "proj", cwd=root)
    assert lint.returncode == 1
    assert [line.split(":")[0] for line in lint.stdout.splitlines() if "JIT" in line] == ["proj/inside.py"]
    diff = run_cli("--diff", "--unsafe-fixes", "proj", cwd=root)
    assert "+++ proj/inside.py" in diff.stdout and "outside" not in diff.stdout
    for flags in (["--add-noqa"], ["--fix", "--unsafe-fixes"]):
        (root / "proj" / "inside.py").write_text(BREAKING_GATE)
        result = run_cli(*flags, "proj", cwd=root)
        assert result.returncode == 0, result.stderr
        assert (root / "proj" / "inside.py").read_text() != BREAKING_GATE
        assert (root / "outside.py").read_text() == BREAKING_GATE, flags


def test_a_directory_link_named_on_the_command_line_is_followed(tree_with_a_link_to_its_parent):
    root = tree_with_a_link_to_its_parent
    lint = run_cli("--no-cache", "--output-format", "concise", "proj/up", cwd=root)
    assert [line.split(":")[0] for line in lint.stdout.splitlines() if "JIT" in line] == [
        "proj/up/outside.py", "proj/up/proj/inside.py"]  # and not proj/up/proj/up/...


def test_a_file_link_found_while_walking_is_linted_and_fixed_through_the_link(tmp_path):
    (tmp_path / "shared.py").write_text(BREAKING_GATE)
    (tmp_path / "proj").mkdir()
    os.symlink("../shared.py", tmp_path / "proj" / "model.py")
    lint = run_cli("--no-cache", "--output-format", "concise", "proj", cwd=tmp_path)
    assert lint.stdout.startswith("proj/model.py:7:")
    fix = run_cli("--fix", "--unsafe-fixes", "proj", cwd=tmp_path)
    assert fix.returncode == 0, fix.stderr
    assert os.readlink(tmp_path / "proj" / "model.py") == "../shared.py"
    assert "torch.where(" in (tmp_path / "shared.py").read_text()


_PATTERNS = [*Config().exclude, "src/gen/", "tests/*_data.py", "*.pyi", "a[bc]/x.py", "**/vendored/*", "[!x]*.py"]
_PATHS = ["src/gen/x.py", "tests/foo_data.py", "a/b/c.py", ".venv/lib/x.py", "ac/x.py", "x/vendored/y.py",
          "y.py", "xx.py", "build/lib/z.py", "node_modules/a.py", "/elsewhere/build/q.py"]


def _fnmatch_one(path: str, pattern: str) -> bool:
    """An exclude pattern read the documented way: the relative path, the basename, a directory or a part."""
    relative = os.path.relpath(os.path.abspath(path)).replace(os.sep, "/")
    pattern = pattern.rstrip("/")
    return (fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern)
            or fnmatch.fnmatch(relative, pattern + "/*")
            or any(fnmatch.fnmatch(part, pattern) for part in relative.split("/")[:-1]))


@pytest.mark.parametrize("path", _PATHS)
def test_one_regex_for_all_excludes_matches_as_each_pattern_does(path):
    for count in range(len(_PATTERNS) + 1):
        patterns = _PATTERNS[:count]
        assert path_matches_any(path, patterns) == any(_fnmatch_one(path, p) for p in patterns), patterns
    assert all(path_matches_any(path, [p]) == _fnmatch_one(path, p) for p in _PATTERNS)
