"""Shared helpers: run the real CLI in a subprocess, real files to lint, JSON reports checked against the schema.

The helpers a rule author needs (example cases, flagged lines, a FileContext over a
snippet, fix proofs) are public: `compile_lint.testing`.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

import pytest


# The suite's temp files (pytest's tmp_path dirs, Inductor's kernels and precompiled headers,
# which torch puts under the temp dir whatever TORCHINDUCTOR_CACHE_DIR says) all go into one
# directory of this session, for the tests and the CLIs they run, removed when it ends:
# nothing is left in the system's temp dir.
SESSION_TMP = tempfile.mkdtemp(prefix="compile-lint-tests-")
os.environ["TMPDIR"] = SESSION_TMP
tempfile.tempdir = SESSION_TMP
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(SESSION_TMP, "torchinductor"))


def pytest_unconfigure(config):
    shutil.rmtree(SESSION_TMP, ignore_errors=True)


# A model whose forward branches on tensor data (JIT101, with an unsafe torch.where fix).
BREAKING_GATE = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x / 2
        return y
"""


def _first_file(*candidates: str) -> Optional[str]:
    return next((path for path in candidates if os.path.isfile(path)), None)


def own_home_environment(home: str) -> dict[str, str]:
    """os.environ for a tool that writes per-user files (pip, virtualenv, pre-commit): a home of its own.

    HOME and the XDG directories point under `home` (made here), so that nothing lands in the
    user's $HOME (issue 25.16): pip runs `rustc --version`, whose rustup proxy writes
    ~/.rustup; virtualenv and pip cache in ~/.cache. The user's pip and git configuration
    (an index URL, safe.directory) is still read from where it is. No PYTHONPATH.
    """
    user_home = os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(user_home, ".config")
    pip_config = os.environ.get("PIP_CONFIG_FILE") or _first_file(
        os.path.join(config_home, "pip", "pip.conf"), os.path.join(user_home, ".pip", "pip.conf"))
    git_config = os.environ.get("GIT_CONFIG_GLOBAL") or _first_file(
        os.path.join(user_home, ".gitconfig"), os.path.join(config_home, "git", "config"))
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("XDG_") and key not in ("PYTHONPATH", "PIP_CONFIG_FILE", "GIT_CONFIG_GLOBAL")}
    os.makedirs(home, exist_ok=True)
    env.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"), XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_DATA_HOME=os.path.join(home, ".local", "share"), XDG_STATE_HOME=os.path.join(home, ".local", "state"))
    if pip_config:
        env["PIP_CONFIG_FILE"] = pip_config
    if git_config:
        env["GIT_CONFIG_GLOBAL"] = git_config
    return env


def run_cli(*args: str, cwd=None, input_text=None, prefix=()) -> subprocess.CompletedProcess:
    """Run `python -m compile_lint ARGS` and capture its output; `prefix` wraps the command (setpriv)."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "compile_lint", *args],
        cwd=cwd, capture_output=True, text=True, input=input_text, timeout=300,
    )


# Root without the two capabilities that let it read, write and list whatever the file
# modes say: file permissions then apply to it as to any user.
WITHOUT_PERMISSION_BYPASS = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


@pytest.fixture
def unprivileged_cli(tmp_path):
    """`run_cli` as a process that file permissions apply to.

    Root reads a chmod-000 file or directory anyway, and CI runs as root: there the CLI runs
    under `setpriv` with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped, still as root, so
    the checkout, its venv and the interpreter (which may live under /root) stay reachable.
    Runs should pass --no-cache.
    """
    if os.geteuid() != 0:
        yield run_cli
        return
    if shutil.which(WITHOUT_PERMISSION_BYPASS[0]) is None:
        pytest.skip("running as root without setpriv (util-linux): file permissions cannot apply")
    probe = run_cli("--version", cwd=tmp_path, prefix=WITHOUT_PERMISSION_BYPASS)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop root's permission bypass here: {probe.stderr.strip()}")
    yield lambda *args, **kwargs: run_cli(*args, prefix=WITHOUT_PERMISSION_BYPASS, **kwargs)


SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                           "findings.schema.json")


def assert_findings_json(text: str) -> list:
    """Parse a JSON findings report and validate it against docs/findings.schema.json."""
    import jsonschema

    data = json.loads(text)
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.validate(data, schema)
    return data


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def real_files(count: int) -> list[str]:
    """Real nn.Module code: torch's own modules, plus the benchmark corpus when it was fetched."""
    torch = pytest.importorskip("torch")
    base = os.path.dirname(torch.__file__)
    found = sorted(glob.glob(os.path.join(base, "nn", "modules", "*.py")))
    found += sorted(glob.glob(os.path.join(base, "_dynamo", "*.py")))[:10]
    corpus = os.path.join(REPO, "benchmarks", ".cache", "corpus")
    found += sorted(glob.glob(os.path.join(corpus, "**", "*.py"), recursive=True))
    random.Random(9).shuffle(found)
    return found[:count]


def reported_gb_types(result) -> set[str]:
    """The graph-break types a probe saw: each break's first line and the fullgraph error's type."""
    types = {reason.splitlines()[0] for reason in result.graph_breaks}
    for error in (result.fullgraph_error, result.compile_error):
        for prefix in ("Unsupported: ", "TorchRuntimeError: "):
            if error and error.startswith(prefix):
                types.add(error[len(prefix):])
    return types


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True, scope="session")
def user_cache_in_a_temporary_directory(tmp_path_factory):
    """Runs outside a project cache in the user's cache directory: the suite's go to a temp one.

    Set in the environment, so that every CLI, flake8 and pre-commit subprocess inherits it.
    """
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if saved is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = saved
