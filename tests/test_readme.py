"""Every command of the README's Usage block runs as written (issue 16: commands a new user
copies must work). Long-running ones (the server, --watch) are tested in their own files."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from compile_lint.frontends.cli import main
from tests.helpers import BREAKING_GATE, glog, graph_break

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG_RUNNING = ("compile-lint server", "compile-lint --watch")


def _usage_commands() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    block = re.search(r"## Usage\n\n```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md has a Usage block"
    commands = []
    for line in block.group(1).splitlines():
        command = re.sub(r"\s+#\s.*$", "", line).strip()  # drop the trailing comment
        if command and not command.startswith(LONG_RUNNING):
            commands.append(command)
    return commands


COMMANDS = _usage_commands()


def test_the_usage_block_was_found():
    assert len(COMMANDS) >= 15 and all("compile-lint" in command for command in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_usage_command_runs_as_written(command, tmp_path, monkeypatch, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(BREAKING_GATE)
    shutil.copy(os.path.join(ROOT, "tests", "fixtures", "ecosystem", "gated.py"), tmp_path / "src" / "gated.py")
    (tmp_path / "pyproject.toml").write_text("[tool.compile-lint]\n")
    model = str(tmp_path / "src" / "model.py")  # a run's log for explain-log: a break at the model's `if`
    (tmp_path / "run.log").write_text("\n".join(glog(1, graph_break(model, 7, [(model, 7, "forward")]))) + "\n")
    command = command.replace("[PATHS...]", "src/")  # the synopsis line: any paths
    if "|" in command:
        # A pipeline runs in a shell; its `compile-lint` is this checkout's module.
        shell = f'compile-lint() {{ "{sys.executable}" -m compile_lint "$@"; }}\n{command}\n'
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH")))))
        result = subprocess.run(["bash", "-c", shell], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=300)
        code, out, err = result.returncode, result.stdout, result.stderr
    else:
        # The console script is `main`; calling it here saves a interpreter start per command.
        argv = shlex.split(command)
        assert argv[0] == "compile-lint"
        monkeypatch.chdir(tmp_path)
        code = main(argv[1:])
        out, err = capsys.readouterr()
    assert code in (0, 1), out + err  # findings are fine; a usage error is not
    assert "error:" not in err and "Traceback" not in out + err, out + err
