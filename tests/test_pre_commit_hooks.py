"""The pre-commit hooks, run by the real `pre-commit try-repo` in a temporary git repository.

pre-commit builds a virtualenv and pip-installs this project into it, so these tests also
prove the package installs from its own metadata (libcst comes from the package index).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from compile_lint.rules import ALL_RULES
from tests.helpers import own_home_environment

pytest.importorskip("pre_commit")
# Each test builds or reuses a hook environment with pip and runs pre-commit: slow.
pytestmark = [pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"), pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "ecosystem", "gated.py")
SAFE_FIX_EXAMPLES = [
    example for rule in ALL_RULES if rule.fix_applicability == "safe"
    for example in rule.invalid if example.fixed is not None
]


def _environment(pre_commit_home: str) -> dict[str, str]:
    """The environment of a pre-commit run: its own home under `pre_commit_home` (issue 25.16).

    Building a hook's environment runs virtualenv (app data in the user's cache directory),
    pip (its cache, and `rustc --version`, whose rustup proxy writes ~/.rustup) and git.
    """
    env = {key: value for key, value in own_home_environment(os.path.join(pre_commit_home, "home")).items()
           if not key.startswith("GIT_") or key == "GIT_CONFIG_GLOBAL"}
    env.pop("PRE_COMMIT", None)
    env.update(PRE_COMMIT_HOME=pre_commit_home, GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.com",
               GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.com")
    return env


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> str:
    """One pre-commit cache for the module, so a clean checkout builds the hook env once."""
    return str(tmp_path_factory.mktemp("pre-commit-home"))


def make_repository(directory, files: dict[str, str], env) -> None:
    """A git repository at `directory` whose HEAD commits `files`."""
    subprocess.run(["git", "init", "-q", str(directory)], check=True, env=env)
    for name, text in files.items():
        (directory / name).write_text(text)
    subprocess.run(["git", "add", "--", *files], cwd=directory, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "model"], cwd=directory, check=True, env=env)


def try_repo(directory, hook: str, *files: str, env) -> subprocess.CompletedProcess:
    """`pre-commit try-repo <project> HOOK --files FILES...` inside `directory`."""
    command = [sys.executable, "-m", "pre_commit", "try-repo", ROOT, hook]
    if files:
        command += ["--files", *files]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=600)


def test_lint_hook_fails_on_findings_and_prints_them(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    with open(FIXTURE) as handle:
        make_repository(tmp_path, {"model.py": handle.read()}, env)
    result = try_repo(tmp_path, "compile-lint", "model.py", env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "compile-lint....." in output and "Failed" in output
    assert "model.py:8:12: JIT101 " in output
    assert "JIT102" not in output  # its line carries a noqa comment for JIT102
    assert "Found 1 finding in 1 file." in output
    assert "Traceback" not in output


def test_the_hooks_write_nothing_in_home(tmp_path, tmp_path_factory, monkeypatch):
    # Issue 25.16: building the hook environment ran virtualenv (its app data in
    # ~/.cache/virtualenv) and pip (which runs `rustc --version`: rustup's proxy writes
    # ~/.rustup/settings.toml). A fresh pre-commit home, so that the environment is built here.
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    env = _environment(str(tmp_path_factory.mktemp("fresh-pre-commit-home")))
    repository = tmp_path / "repository"
    make_repository(repository, {"clean.py": "x = 1\n"}, env)
    result = try_repo(repository, "compile-lint", "clean.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(path.relative_to(user_home).as_posix() for path in user_home.rglob("*")) == []


def test_lint_hook_passes_a_clean_file(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    make_repository(tmp_path, {"clean.py": "import torch\n\n\ndef scale(x):\n    return x * 2\n"}, env)
    result = try_repo(tmp_path, "compile-lint", "clean.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_no_files_is_a_clean_skip(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    make_repository(tmp_path, {"notes.txt": "not python\n"}, env)
    for files in ((), ("notes.txt",)):
        result = try_repo(tmp_path, "compile-lint-fix", *files, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "(no files to check)Skipped" in result.stdout
        assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.skipif(not SAFE_FIX_EXAMPLES, reason="no rule has a safe fix yet")
def test_fix_hook_rewrites_the_file(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    example = SAFE_FIX_EXAMPLES[0]
    make_repository(tmp_path, {"model.py": example.code}, env)
    result = try_repo(tmp_path, "compile-lint-fix", "model.py", env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output
    assert "Fixed model.py:" in output  # the hook lists what it changed (--show-fixes)
    assert (tmp_path / "model.py").read_text() == example.fixed


def test_fix_hook_leaves_unsafe_fixes_alone(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    # JIT103's torch.where fix evaluates both branches, so --fix alone must not apply it.
    source = (
        "import torch\nfrom torch import nn\n\n\nclass SignedScale(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2 if x.sum() > 0 else x * -1\n"
    )
    make_repository(tmp_path, {"model.py": source}, env)
    result = try_repo(tmp_path, "compile-lint-fix", "model.py", env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "model.py:7:25: JIT103 [unsafe fix]" in output
    assert "1 fixable with --unsafe-fixes." in output
    assert "files were modified by this hook" not in output
    assert (tmp_path / "model.py").read_text() == source


def test_exclude_applies_to_the_files_pre_commit_names(tmp_path, pre_commit_home):
    # Issue 16: pre-commit passes every file by name; the hooks' --force-exclude makes
    # `exclude` in [tool.compile-lint] apply to them, as it does to a directory walk.
    env = _environment(pre_commit_home)
    with open(FIXTURE) as handle:
        model = handle.read()
    make_repository(tmp_path, {
        "pyproject.toml": '[tool.compile-lint]\nextend-exclude = ["mymodels/router.py"]\n',
        "model.py": model,
    }, env)
    (tmp_path / "mymodels").mkdir()
    (tmp_path / "mymodels" / "router.py").write_text(model)
    subprocess.run(["git", "add", "--", "mymodels"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "router"], cwd=tmp_path, check=True, env=env)
    for hook in ("compile-lint", "compile-lint-fix"):
        result = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", ROOT, hook, "--all-files"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        output = result.stdout + result.stderr
        assert result.returncode == 1, output
        assert "model.py:8:12: JIT101" in output
        assert "router.py" not in output, output


def _readme_pre_commit_config() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    [snippet] = re.findall(r"```yaml\n(repos:.*?)```", readme, re.DOTALL)
    return snippet


def test_the_readme_pre_commit_config_works_as_written(tmp_path, pre_commit_home):
    env = _environment(pre_commit_home)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, env=env)
    if head.returncode != 0:
        pytest.skip("the project is not a git checkout, so there is no commit to pin")
    config = _readme_pre_commit_config()
    assert "/path/to/compile-lint" in config and "<commit sha>" in config
    config = config.replace("/path/to/compile-lint", ROOT).replace("<commit sha>", head.stdout.strip())
    with open(FIXTURE) as handle:
        make_repository(tmp_path, {".pre-commit-config.yaml": config, "model.py": handle.read()}, env)
    result = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "model.py:8:12: JIT101" in output and "Found 1 finding in 1 file." in output
