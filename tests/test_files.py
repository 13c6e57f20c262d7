"""File discovery: excludes, .gitignore, explicit files, missing paths, symlink loops."""

import os

from compile_lint.settings.config import Config
from compile_lint.engine.files import discover


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
