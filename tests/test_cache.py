"""The lint cache, through the real CLI: hits, misses, clean, --no-cache, corrupt entries."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from compile_lint.engine import cache
from compile_lint.settings.config import Config
from tests.helpers import BREAKING_GATE, assert_findings_json, run_cli

BREAKING = BREAKING_GATE
CLEAN = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x * 2, x / 2)
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.compile-lint]\nselect = [\"JIT\"]\n")
    (tmp_path / "bad.py").write_text(BREAKING)
    (tmp_path / "good.py").write_text(CLEAN)
    return tmp_path


def _lint(project, *flags):
    result = run_cli("--output-format", "json", *flags, ".", cwd=project)
    assert result.returncode in (0, 1), result.stderr
    return assert_findings_json(result.stdout)


def _entries(project) -> list[str]:
    return sorted(glob.glob(str(project / cache.CACHE_DIR_NAME / "*" / "*" / "*.json")))


def test_second_run_reads_findings_from_the_cache(project):
    first = _lint(project)
    entries = _entries(project)
    assert len(entries) == 2 and first
    # Prove the hit: an entry edited by hand is what the next run reports.
    for entry in entries:
        data = json.loads(open(entry).read())
        for item in data["diagnostics"]:
            item[7] = "from the cache"
        open(entry, "w").write(json.dumps(data))
    second = _lint(project)
    assert [d["message"] for d in second] == ["from the cache"] * len(first)
    assert [(d["line"], d["code"]) for d in second] == [(d["line"], d["code"]) for d in first]


def test_a_changed_file_is_linted_afresh(project):
    assert _lint(project)
    (project / "bad.py").write_text(CLEAN)
    assert _lint(project) == []
    (project / "bad.py").write_text(BREAKING)
    assert _lint(project)


def test_a_changed_config_uses_other_entries(project):
    assert _lint(project)
    (project / "pyproject.toml").write_text("[tool.compile-lint]\nignore = [\"JIT101\"]\n")
    assert _lint(project) == []
    # two settings dirs, the project index (project-index/), .gitignore, CACHEDIR.TAG
    assert len(os.listdir(project / cache.CACHE_DIR_NAME)) == 5


def test_settings_key_changes_with_version_and_source(monkeypatch):
    config = Config()
    before = cache.settings_key(config)
    monkeypatch.setattr(cache, "_fingerprint", None)
    monkeypatch.setattr(cache, "__version__", "999.0")
    assert cache.settings_key(config) != before
    monkeypatch.setattr(cache, "_fingerprint", "edited rule source")
    assert cache.settings_key(config) not in (before,)
    assert cache.settings_key(Config(ignore=("JIT101",))) != cache.settings_key(config)


def test_the_same_content_at_another_path_is_another_entry():
    assert cache.content_digest("a.py", b"x = 1\n") != cache.content_digest("b.py", b"x = 1\n")
    assert cache.content_digest("a.py", b"x = 1\n") != cache.content_digest("a.py", b"x = 2\n")


def test_corrupt_entries_are_ignored_and_rewritten(project):
    expected = _lint(project)
    for entry in _entries(project):
        with open(entry, "wb") as handle:
            handle.write(b"\x00{not json")
    assert _lint(project) == expected
    for entry in _entries(project):
        json.loads(open(entry).read())  # rewritten whole


def test_entries_of_the_wrong_shape_are_misses(project):
    expected = _lint(project)
    for entry in _entries(project):
        open(entry, "w").write(json.dumps({"format": cache.FORMAT, "path": "bad.py", "diagnostics": [[1, 2]]}))
    assert _lint(project) == expected


def test_clean_removes_the_cache(project):
    _lint(project)
    assert (project / cache.CACHE_DIR_NAME).is_dir()
    result = run_cli("clean", cwd=project)
    assert result.returncode == 0 and "Removed" in result.stdout
    assert not (project / cache.CACHE_DIR_NAME).exists()
    again = run_cli("clean", cwd=project)
    assert again.returncode == 0 and "No cache" in again.stdout


def test_no_cache_neither_reads_nor_writes(project):
    assert _lint(project, "--no-cache")
    assert not (project / cache.CACHE_DIR_NAME).exists()
    _lint(project)
    for entry in _entries(project):
        data = json.loads(open(entry).read())
        for item in data["diagnostics"]:
            item[7] = "from the cache"
        open(entry, "w").write(json.dumps(data))
    assert all(d["message"] != "from the cache" for d in _lint(project, "--no-cache"))


def test_cache_dir_ignores_itself_in_git(project):
    _lint(project)
    assert (project / cache.CACHE_DIR_NAME / ".gitignore").read_text().strip().endswith("*")


def test_fix_bypasses_the_cache_and_the_next_lint_sees_the_fixed_file(project):
    before = _lint(project)
    assert before
    fixed = run_cli("--fix", "--unsafe-fixes", ".", cwd=project)
    assert fixed.returncode in (0, 1), fixed.stderr
    assert (project / "bad.py").read_text() != BREAKING
    assert _lint(project) == []


@pytest.mark.slow
def test_concurrent_runs_agree(project):
    for index in range(20):
        (project / f"copy{index}.py").write_text(BREAKING)
    command = [sys.executable, "-m", "compile_lint", "--output-format", "json", "--jobs", "2", "."]
    runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)]
    outputs = [json.loads(run.communicate(timeout=300)[0]) for run in runs]
    assert outputs[0] == outputs[1] == outputs[2] == _lint(project, "--no-cache")
    assert not glob.glob(str(project / cache.CACHE_DIR_NAME / "*" / "*" / ".tmp-*"))


def test_outside_a_project_the_cache_goes_to_the_users_cache_directory(tmp_path):
    scratch, home = tmp_path / "scratch", tmp_path / "xdg"
    scratch.mkdir()
    (scratch / "bad.py").write_text(BREAKING)
    env = dict(os.environ, XDG_CACHE_HOME=str(home))
    run = [sys.executable, "-m", "compile_lint"]
    first = subprocess.run(run + ["bad.py"], cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stderr
    assert os.listdir(scratch) == ["bad.py"]  # nothing left where it ran (issue 16)
    entries = glob.glob(str(home / "compile-lint" / "*" / "*" / "*.json"))
    assert len(entries) == 1
    settings = subprocess.run(run + ["--show-settings"], cwd=scratch, env=env, capture_output=True, text=True,
                              timeout=300)
    assert f"# cache: {home / 'compile-lint'}" in settings.stdout
    cleaned = subprocess.run(run + ["clean"], cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert cleaned.stdout == f"Removed {home / 'compile-lint'}\n" and not (home / "compile-lint").exists()


def test_user_cache_directory_per_platform(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.user_cache_dir() == str(tmp_path / "compile-lint")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # invalid per the XDG spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert cache.user_cache_dir() == str(tmp_path / "home" / ".cache" / "compile-lint")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache.user_cache_dir() == str(tmp_path / "home" / "Library" / "Caches" / "compile-lint")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert cache.user_cache_dir() == str(tmp_path / "local" / "compile-lint")
    assert cache.cache_root(Config(root=str(tmp_path), source=str(tmp_path / "pyproject.toml"))) == str(
        tmp_path / ".compile-lint-cache")


def test_clean_outside_a_project_keeps_the_verifiers_inductor_kernels(tmp_path):
    # Issue 25.14: the verifier keeps Inductor's kernels in the user's cache directory too
    # (compile-lint/torchinductor); `clean` removes the lint cache only.
    scratch, home = tmp_path / "scratch", tmp_path / "xdg"
    scratch.mkdir()
    (scratch / "bad.py").write_text(BREAKING)
    kernels = home / "compile-lint" / "torchinductor" / "fxgraph"
    kernels.mkdir(parents=True)
    (kernels / "kernel.py").write_text("# compiled\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(home))
    run = [sys.executable, "-m", "compile_lint"]
    assert subprocess.run(run + ["bad.py"], cwd=scratch, env=env, capture_output=True, timeout=300).returncode == 1
    assert glob.glob(str(home / "compile-lint" / "*" / "*" / "*.json"))
    cleaned = subprocess.run(run + ["clean"], cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert cleaned.returncode == 0
    assert cleaned.stdout == (f"Removed the lint cache in {home / 'compile-lint'} "
                              f"(kept the verifier's Inductor kernels in {home / 'compile-lint' / 'torchinductor'})\n")
    assert sorted(os.listdir(home / "compile-lint")) == ["torchinductor"]
    assert (kernels / "kernel.py").read_text() == "# compiled\n"
    again = subprocess.run(run + ["clean"], cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
    assert again.stdout == f"No cache at {home / 'compile-lint'}\n"
