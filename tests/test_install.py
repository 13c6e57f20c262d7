"""Installing compile-lint as the README says (issue 16): the git-URL install builds without
setuptools' license deprecation, and the documented torch range is the one tested."""

import os
import re
import subprocess
import sys
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from compile_lint.settings.versions import installed_torch_version
from tests.helpers import own_home_environment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return handle.read()


def test_the_git_url_install_builds_with_an_spdx_license_and_no_deprecation(tmp_path, monkeypatch):
    user_home = tmp_path / "user-home"  # pip writes nothing in $HOME (issue 25.16)
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("the project is not a git checkout, so there is no commit to install")
    readme_line = next(line for line in _read("README.md").splitlines() if "@ git+" in line)
    assert 'pip install "compile-lint @ git+<compile-lint repository URL>@<commit sha>"' in readme_line
    url = f"compile-lint @ git+file://{ROOT}@{head.stdout.strip()}"
    # `pip wheel` runs what `pip install` runs up to the install: clone, isolated build, metadata.
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-v",
                            "-w", str(tmp_path / "wheels"), url],
                           capture_output=True, text=True, timeout=600,
                           env=own_home_environment(str(tmp_path / "pip-home")))
    output = built.stdout + built.stderr
    assert built.returncode == 0, output[-3000:]
    assert "project.license" not in output and "License classifiers are deprecated" not in output
    [wheel] = os.listdir(tmp_path / "wheels")
    with zipfile.ZipFile(tmp_path / "wheels" / wheel) as archive:
        metadata = archive.read("compile_lint-0.1.0.dist-info/METADATA").decode()
        names = archive.namelist()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert "compile_lint-0.1.0.dist-info/licenses/LICENSE" in names
    assert not list(user_home.iterdir())


def test_the_supported_torch_range_is_the_tested_one():
    project = tomllib.loads(_read("pyproject.toml"))["project"]
    [torch] = [Requirement(text) for text in project["optional-dependencies"]["verify"]
               if Requirement(text).name == "torch"]
    match = re.search(r"Supported: torch (\d+\.\d+) to (\d+\.\d+)\.", _read("README.md"))
    assert match, "README.md must state the supported torch range"
    low, high = Version(match[1]), Version(match[2])
    # The extra's floor is the documented floor; it has no ceiling, so pip never downgrades a user's torch.
    assert str(torch.specifier) == f">={low}"
    pin = re.search(r"^TORCH_PIN := torch==(\S+)$", _read("Makefile"), re.MULTILINE)
    assert pin and low <= Version(pin[1]) and Version(pin[1]).release[:2] <= high.release
    # The suite calibrates every rule on the installed torch: it must be inside the range claimed.
    installed = installed_torch_version()
    assert installed is not None, "the test suite needs torch (make test installs torch==2.13.0)"
    assert low <= Version(installed) and Version(installed).release[:2] <= high.release, (
        f"torch {installed} is outside the documented range {low}-{high}: check it, then update README.md")


FINDING_LINE = re.compile(r"^examples/\S+\.py:\d+:\d+: JIT\d{3} ")


@pytest.mark.slow
def test_make_run_on_a_fresh_clone_prints_the_findings_first(tmp_path):
    """`make run` (issue 41.10): the venv and the install say nothing, not even the pip warnings this
    machine's pip configuration causes or setuptools' editable-install warning; the findings come first."""
    if subprocess.run(["make", "--version"], capture_output=True).returncode != 0:
        pytest.skip("make is not installed")
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("the project is not a git checkout: no clone to copy")
    clone = tmp_path / "clone"
    for name in filter(None, listed.stdout.split("\0")):
        source = os.path.join(ROOT, name)
        if os.path.isfile(source):
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(open(source, "rb").read())
    base_python = getattr(sys, "_base_executable", sys.executable)
    env = own_home_environment(str(tmp_path / "home"))
    for variable in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
        env.pop(variable, None)  # under `make test` (CI): a new user's `make run` is no sub-make of it
    done = subprocess.run(["make", "run", f"PYTHON={base_python}"], cwd=clone, env=env, timeout=900,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout[-3000:]
    assert lines and FINDING_LINE.match(lines[0]), "\n".join(lines[:20])
