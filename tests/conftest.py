"""pytest's fixtures and hooks for the suite: one temp directory per session, the CLI as a fixture.

The helpers the tests import (run_cli, assert_findings_json, real_files, ...) are in
tests/helpers.py, a plain module: conftest.py is pytest's, not a library.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading

import pytest

from tests.helpers import WITHOUT_PERMISSION_BYPASS, run_cli

# The suite's temp files (pytest's tmp_path dirs, Inductor's kernels and precompiled headers,
# which torch puts under the temp dir whatever TORCHINDUCTOR_CACHE_DIR says) all go into one
# directory of this session, for the tests and the CLIs they run, removed when it ends:
# nothing is left in the system's temp dir.
SESSION_TMP = tempfile.mkdtemp(prefix="compile-lint-tests-")
os.environ["TMPDIR"] = SESSION_TMP
tempfile.tempdir = SESSION_TMP
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(SESSION_TMP, "torchinductor"))
# A node the program model cannot evaluate raises in the suite (and the CLIs it runs) instead of being
# skipped quietly, as it is for users: a model bug must fail a test, not thin the traced set.
os.environ["COMPILE_LINT_STRICT_MODEL"] = "1"


def pytest_unconfigure(config):
    shutil.rmtree(SESSION_TMP, ignore_errors=True)


# A run stopped by SIGTERM (a CI time limit, `timeout`) unwinds as Ctrl-C does, so pytest still
# unconfigures and the session's directory goes; atexit removes it if pytest never got that far.
atexit.register(shutil.rmtree, SESSION_TMP, True)


def _stop(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, _stop)
    # A suite started in the background of a non-interactive shell (`.ci/run &`) inherits SIGINT
    # ignored, and so would every CLI it runs: the tests of Ctrl-C would send it to a process that
    # never sees it. A handler of ours is reset to the default in each child at exec, as a terminal has it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
