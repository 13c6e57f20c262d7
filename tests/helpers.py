"""Helpers the tests share: run the real CLI in a subprocess, real files to lint, JSON reports
checked against the schema, a project tree written from sources.

A plain module (`from tests.helpers import run_cli`); tests/conftest.py keeps only pytest's
fixtures and hooks. The helpers a rule author needs (example cases, flagged lines, a
FileContext over a snippet, fix proofs) are public: `compile_lint.testing`.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from typing import Optional

import pytest

from compile_lint.analysis.file.paths import condition_text

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
               XDG_DATA_HOME=os.path.join(home, ".local", "share"),
               XDG_STATE_HOME=os.path.join(home, ".local", "state"))
    if pip_config:
        env["PIP_CONFIG_FILE"] = pip_config
    if git_config:
        env["GIT_CONFIG_GLOBAL"] = git_config
    return env


def run_cli(*args: str, cwd=None, input_text=None, prefix=(), env=None) -> subprocess.CompletedProcess:
    """Run `python -m compile_lint ARGS` and capture its output; `prefix` wraps the command (setpriv);
    `env` replaces the environment."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "compile_lint", *args],
        cwd=cwd, capture_output=True, text=True, input=input_text, timeout=300, env=env,
    )


# Root without the two capabilities that let it read, write and list whatever the file
# modes say: file permissions then apply to it as to any user.
WITHOUT_PERMISSION_BYPASS = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_PATH = os.path.join(REPO, "docs", "findings.schema.json")


def assert_findings_json(text: str) -> list:
    """Parse a JSON findings report and validate it against docs/findings.schema.json."""
    import jsonschema

    data = json.loads(text)
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.validate(data, schema)
    return data


SARIF_SCHEMA_PATH = os.path.join(REPO, "tests", "schemas", "sarif-schema-2.1.0.json")


def sarif_validator():
    """A validator for SARIF 2.1.0 logs: the official schema, with its formats checked."""
    import jsonschema

    with open(SARIF_SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


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


def write_tree(root, files: dict[str, str]) -> None:
    """Write `files` (relative path -> dedented source) under `root`."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


# ----- next steps: what counts as a concrete step in a finding's message -------------------------
#
# A message says what breaks, then, after "; ", what to do. The step is concrete when it holds
# code to write between backticks: code that parses (an expression, a statement, a decorator,
# the header of an `if`/`with`) and is more than a bare name. A rule declares the code its
# messages end in (`Rule.steps`); a withheld fix ends in a recipe of fixes/next_steps.py.

BY_HAND = "; by hand: "


def message_clauses(message: str) -> list[str]:
    """`message` split at "; ", except inside backticks (`a; b` is one piece of code)."""
    clauses, current, quoted = [], "", False
    index = 0
    while index < len(message):
        if message[index] == "`":
            quoted = not quoted
        if not quoted and message.startswith("; ", index):
            clauses.append(current)
            current, index = "", index + 2
            continue
        current += message[index]
        index += 1
    return clauses + [current]


def step_clause(message: str) -> str:
    """The step a message ends in: the recipe after "by hand: " where a fix is withheld, else its last clause."""
    if BY_HAND in message:
        return message.split(BY_HAND, 1)[1]
    return message_clauses(message)[-1]


def code_spans(text: str) -> list[str]:
    """The pieces of code `text` quotes between backticks."""
    return re.findall(r"`([^`]+)`", text)


def parse_code(span: str, filled_in: str = "x") -> Optional[ast.Module]:
    """`span` parsed as Python, each `{name}` replaced by `filled_in`; None when it is no code.

    A decorator is read as the expression after its `@`, and the header of an `if`/`with`
    gets a body.
    """
    source = re.sub(r"\{\w+\}", filled_in, span).lstrip("@")
    for candidate in (source, source + "\n    pass"):
        try:
            return ast.parse(candidate)
        except SyntaxError:
            continue
    return None


def is_code(span: str) -> bool:
    """True for code a person can write: it parses, and it is more than a bare name or constant."""
    tree = parse_code(span)
    if tree is None:
        return False
    only = tree.body[0] if len(tree.body) == 1 else None
    bare = isinstance(only, ast.Expr) and isinstance(only.value, (ast.Name, ast.Attribute, ast.Constant))
    return span.startswith("@") or not bare


def step_pattern(step: str) -> re.Pattern:
    """A pattern for a declared step quoted in a message, `{name}` matching what the message filled in."""
    return re.compile(re.sub(r"\\\{\w+\\\}", "[^`]+", re.escape(f"`{step}`")))


def rule_text(diagnostic) -> str:
    """A diagnostic's message as its rule wrote it: without the mode, condition and entry point the engine adds."""
    message = diagnostic.message
    suffixes = []
    if diagnostic.mode:
        suffixes.append(f" ({condition_text(diagnostic.mode)})")
    if diagnostic.condition:
        suffixes.append(f" (breaks only when `{diagnostic.condition}`)")
    if diagnostic.reached_from:
        path, line, function = diagnostic.reached_from[0]
        suffixes.append(f" (reached from {path}:{line} in {function})")
    for suffix in reversed(suffixes):
        assert message.endswith(suffix), (message, suffix)
        message = message[: -len(suffix)]
    return message


# Dynamo's messages as torch 2.13 writes them (torch/_dynamo/symbolic_convert.py,
# torch/_logging/_internal.py), for `compile-lint explain-log`.
def glog(pid: int, message: str, log: str = "graph_breaks", compile_id: str = "0/0") -> list[str]:
    """A message as the TORCH_LOGS formatter writes it: every line behind the same prefix."""
    prefix = f"V1203 10:23:53.281000 {pid} torch/_dynamo/symbolic_convert.py:5124] [{compile_id}] [__{log}]"
    return [f"{prefix} {line}" for line in message.split("\n")]


def graph_break(path: str, line: int, stack: list[tuple[str, int, str]], gb_type="Data-dependent branching",
                gb_id="gb0170") -> str:
    """A graph-break message at path:line with the user stack `stack` ((path, line, function), outermost first)."""
    frames = "".join(f'  File "{p}", line {n}, in {f}\n    code()\n' for p, n, f in stack)
    return (f"Graph break in user code at {path}:{line}\n"
            "Graph Break Reason: Encountered graph break when attempting to trace CALL: "
            "a function call, e.g. f(x, y):\n"
            f"\n{gb_type}\n  Explanation: Detected it.\n  Hint: Use `torch.cond`.\n\n"
            "  Developer debug context: attempted to jump with TensorVariable()\n\n"
            f" For more details about this graph break, please visit: https://x/gb/{gb_id}.html\n\n"
            "Stack variable source attribution:\n"
            f'  File "{path}", line {line - 1}\n        y = x + 1\n\n'
            f"User code traceback:\n{frames}")


def _proc_stat(pid: int) -> Optional[list[str]]:
    """/proc/PID/stat's fields after the command name (state first), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def child_processes(pid: int) -> set[tuple[int, str]]:
    """The live children of `pid`, each as (pid, start time), read from /proc (Linux): the start time
    tells a process from a later one that reuses its pid."""
    children = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _proc_stat(int(name))
            # fields[1] is the parent's pid, fields[19] the start time (stat's 4th and 22nd fields).
            if fields and fields[1] == str(pid) and fields[0] != "Z":
                children.add((int(name), fields[19]))
    return children


def still_running(processes: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """Those of `processes` (from `child_processes`) that are still running: not gone, not a zombie."""
    running = set()
    for pid, started in processes:
        fields = _proc_stat(pid)
        if fields and fields[19] == started and fields[0] != "Z":
            running.add((pid, started))
    return running
