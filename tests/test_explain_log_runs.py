"""`compile-lint explain-log` on logs the installed torch writes, checked against the verifier's own mapping.

Each program runs in a subprocess with TORCH_LOGS (and TORCH_TRACE) set, on backend="eager";
the verifier (`compile-lint verify --backend eager`) runs the same factories. Every graph
break and recompile the verifier maps into the project must come out of the log at the same
line with the same graph-break type, from the text log and from the trace alike; a break the
verifier places inside an installed library must come out at the project's call into it,
naming that library line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.helpers import REPO, assert_findings_json, run_cli, sarif_validator, write_tree

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

# Runs factories of a targets file as `compile-lint verify` does (same seed, no_grad, the
# factory's mode), compiled with the eager backend, writing to stdout and stderr around the
# logs as a training script does.
DRIVER = """
import importlib.util, os, sys, warnings
import torch

path, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
spec = importlib.util.spec_from_file_location("targets_under_test", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for name in names:
    print(f"epoch 0: {name}", file=sys.stderr)
    warnings.warn(f"running {name}")
    model, calls = getattr(module, name)()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager")
    torch.manual_seed(0)
    with torch.no_grad():
        for call in calls:
            compiled(*call)
    print(f"done: {name}")
"""
EXAMPLE_TARGETS = ("transformer_block", "detection_head", "score_filter", "clean_score_filter", "moe_router",
                   "sparse_dispatch")
GRAPH_BREAK_RECORD = re.compile(r"\[__graph_breaks\] Graph break (?:\(user stack suppressed[^)]*\) )?in user code at ")


def run_logged(targets_file: str, names, out_dir, cwd, pythonpath=(), logs="graph_breaks,recompiles",
               log_format=None, tag="run") -> tuple[str, str]:
    """Run the factories under TORCH_LOGS and TORCH_TRACE; the stderr capture's path and the trace directory."""
    driver = os.path.join(out_dir, "driver.py")
    with open(driver, "w", encoding="utf-8") as handle:
        handle.write(DRIVER)
    log, trace = os.path.join(out_dir, f"{tag}.log"), os.path.join(out_dir, f"{tag}-trace")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TORCH_LOGS", "TORCH_TRACE"))}
    env.update(TORCH_LOGS=logs, TORCH_TRACE=trace, PYTHONPATH=os.pathsep.join(pythonpath))
    if log_format:
        env["TORCH_LOGS_FORMAT"] = log_format
    done = subprocess.run([sys.executable, driver, targets_file, *names], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(log, "w", encoding="utf-8") as handle:
        handle.write(done.stderr)
    return log, trace


def verified(targets, cwd, pythonpath=()) -> list[dict]:
    """The verifier's runtime findings (JIT900 breaks, JIT901 recompiles) for the targets."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, *pythonpath]))
    done = subprocess.run([sys.executable, "-m", "compile_lint", "verify", "--backend", "eager", "--no-lint",
                           "--output-format", "json", *targets], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return [f for f in json.loads(done.stdout) if f["code"] in ("JIT900", "JIT901")]


def explained(*args, cwd) -> list[dict]:
    done = run_cli("explain-log", "--output-format", "json", *args, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return assert_findings_json(done.stdout)


def logged_breaks(log: str) -> int:
    """Graph-break records in the raw log, counted without the parser under test."""
    with open(log, encoding="utf-8") as handle:
        return len(GRAPH_BREAK_RECORD.findall(handle.read()))


def site(finding: dict) -> tuple:
    return finding["path"], finding["line"], finding["code"], finding["gb_type"]


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("examples-run"))
    targets = os.path.join("examples", "targets.py")
    log, trace = run_logged(os.path.join(REPO, targets), EXAMPLE_TARGETS, out, cwd=REPO)
    return log, trace, verified([f"{targets}:{name}" for name in EXAMPLE_TARGETS], cwd=REPO)


def test_every_break_and_recompile_of_the_examples_is_where_the_verifier_puts_it(examples_run):
    log, trace, expected = examples_run
    assert {f["code"] for f in expected} == {"JIT900", "JIT901"}  # the examples break and recompile
    from_log = explained(log, cwd=REPO)
    assert {site(f) for f in from_log} == {site(f) for f in expected}
    assert explained(trace, cwd=REPO) == from_log
    assert sum(f["count"] for f in from_log if f["code"] == "JIT900") == logged_breaks(log)
    assert all(f["runtime"] is True for f in from_log)


def static_findings(paths, cwd) -> dict[tuple, dict]:
    """The linter's own findings (every rule) by (path, line): the first at each line."""
    done = run_cli("--select", "ALL", "--no-cache", "--output-format", "json", *paths, cwd=cwd)
    found: dict[tuple, dict] = {}
    for finding in assert_findings_json(done.stdout):
        found.setdefault((finding["path"], finding["line"]), finding)
    return found


def assert_joined_with_the_linter(findings, static) -> None:
    """Each runtime finding names the static finding at its line and carries its fix, or says there is none."""
    for finding in findings:
        if not finding["static"]:
            assert "seen at run time, no static rule" in finding["message"] and finding["fix"] is None
            continue
        first = finding["static"][0]["code"]
        assert first in finding["message"]
        at_line = static.get((finding["path"], finding["line"]))
        if at_line is not None and at_line["code"] == first:
            assert finding["fix"] == at_line["fix"]


def test_the_examples_breaks_are_joined_with_the_static_findings_and_their_fixes(examples_run):
    log, _, _ = examples_run
    findings = explained(log, cwd=REPO)
    assert_joined_with_the_linter(findings, static_findings(["examples"], cwd=REPO))
    assert any(f["static"] and f["fix"] for f in findings)


def test_the_examples_in_every_output_format(examples_run):
    log, _, _ = examples_run
    findings = explained(log, cwd=REPO)
    sarif = run_cli("explain-log", "--output-format", "sarif", log, cwd=REPO)
    assert sarif.returncode == 1
    document = json.loads(sarif.stdout)
    assert not list(sarif_validator().iter_errors(document))
    results = document["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["occurrenceCount"])
            for r in results] == [(f["code"], f["line"], f["count"]) for f in findings]
    for output_format in ("text", "concise", "github"):
        done = run_cli("explain-log", "--output-format", output_format, log, cwd=REPO)
        assert done.returncode == 1, done.stderr
        for finding in findings:
            spelled = (f"file={finding['path']},line={finding['line']}," if output_format == "github"
                       else f"{finding['path']}:{finding['line']}:{finding['column']}: {finding['code']}")
            assert spelled in done.stdout
    text = run_cli("explain-log", log, cwd=REPO).stdout
    assert f"{logged_breaks(log)} graph breaks" in text.splitlines()[-1]


PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": """
        import torch


        def gate(x):
            if x.sum() > 0:
                return x * 2
            return x - 1


        def log_steps(x):
            for _ in range(2):
                print("step")
                x = x + 1
            return x
        """,
    "pkg/model.py": """
        import torch
        from torch import nn

        import fakelib
        from pkg.helpers import gate, log_steps


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.calls = 0

            def forward(self, x, scale=1.0):
                self.calls += 1
                y = gate(self.lin(x) * scale)
                y = fakelib.normalize(y)
                return log_steps(y)
        """,
    "targets.py": """
        import torch

        from pkg.model import Net


        def make():
            torch.manual_seed(0)
            x = torch.randn(2, 4)
            return Net(), [(x, 1.0), (x, 2.0), (x + 1, 3.0)]
        """,
}
LIBRARY = {
    "fakelib/__init__.py": """
        import torch


        def _has_nan(t):
            return bool(t.isnan().any())


        def normalize(t):
            if _has_nan(t):
                t = torch.nan_to_num(t)
            return t / t.norm()
        """,
}


@pytest.fixture(scope="module")
def package_run(tmp_path_factory):
    """A two-file package calling into a library installed outside it, run once with glog lines and
    trace_source mixed in, once with a custom TORCH_LOGS_FORMAT; and the verifier on the same factory."""
    base = tmp_path_factory.mktemp("package-run")
    project, library = base / "project", base / "site"
    write_tree(project, PACKAGE)
    write_tree(library, LIBRARY)
    path = [str(library), str(project)]
    log, trace = run_logged("targets.py", ["make"], str(base), cwd=str(project), pythonpath=path,
                            logs="graph_breaks,recompiles,trace_source")
    bare_log, _ = run_logged("targets.py", ["make"], str(base), cwd=str(project), pythonpath=path,
                             log_format="%(levelname)s:%(name)s:%(message)s", tag="custom-format")
    return {"project": str(project), "library": str(library), "log": log, "trace": trace, "bare_log": bare_log,
            "verified": verified(["targets.py:make"], cwd=str(project), pythonpath=path)}


def _line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as handle:
        return next(number for number, line in enumerate(handle, 1) if text in line)


def test_a_break_in_a_helper_file_and_one_inside_a_library_are_placed_on_the_users_lines(package_run):
    project = package_run["project"]
    findings = explained(package_run["log"], "--project", project, cwd=project)
    by_site = {site(f): f for f in findings}
    call_into_library = ("pkg/model.py", _line_of(os.path.join(project, "pkg", "model.py"), "fakelib.normalize("))
    inside_library = 0
    for expected in package_run["verified"]:
        if not os.path.isabs(expected["path"]):  # in the project: the same line and type
            assert site(expected) in by_site, (expected, sorted(by_site))
            continue
        # The verifier reports a break inside the installed library where it happens; explain-log
        # at the project's call into it, naming that library line.
        assert expected["path"].startswith(package_run["library"])
        match = by_site[(*call_into_library, expected["code"], expected["gb_type"])]
        frame = match["library_frames"][-1]
        assert (frame["path"], frame["line"]) == (expected["path"], expected["line"])
        assert f"fakelib/__init__.py:{expected['line']}" in match["message"]
        inside_library += 1
    assert inside_library == 1
    assert all(not os.path.isabs(f["path"]) for f in findings)  # every site is in the project
    assert sum(f["count"] for f in findings if f["code"] == "JIT900") == logged_breaks(package_run["log"])


def test_the_trace_and_a_custom_log_format_say_the_same_as_the_text_log(package_run):
    project = package_run["project"]
    from_log = explained(package_run["log"], "--project", project, cwd=project)
    assert explained(package_run["trace"], "--project", project, cwd=project) == from_log
    assert explained(package_run["bare_log"], "--project", project, cwd=project) == from_log


def test_lines_no_rule_flags_are_the_rules_to_do_list(package_run):
    project = package_run["project"]
    findings = explained(package_run["log"], "--project", project, cwd=project)
    to_do = [f for f in findings if not f["static"]]
    assert to_do and len(to_do) < len(findings)
    assert_joined_with_the_linter(findings, static_findings(["pkg"], cwd=project))
    in_helper = ("pkg/helpers.py", _line_of(os.path.join(project, "pkg", "helpers.py"), 'print("step")'))
    printed = next(f for f in findings if (f["path"], f["line"]) == in_helper)
    assert printed["static"] and printed["fix"] is not None  # the helper's own rule, reached across files
    text = run_cli("explain-log", "--project", project, package_run["log"], cwd=project)
    assert f"{len(to_do)} seen at run time, no static rule" in text.stdout.splitlines()[-1]
