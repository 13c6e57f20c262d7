"""`compile-lint explain-log`: reading Dynamo's messages, placing them in the project, errors and exit codes.

The messages here are spelled as torch 2.13 writes them (torch/_dynamo/symbolic_convert.py,
convert_frame.py, guards.py, torch/_logging/_internal.py); tests/test_explain_log_runs.py
reads logs the installed torch really writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from compile_lint.settings.config import Config
from compile_lint.verifier.runtime_log.reading import read_lines
from compile_lint.verifier.runtime_log.records import (
    Frame,
    GraphBreakRecord,
    RecompileRecord,
    fill_suppressed_stacks,
    parse_record,
)
from compile_lint.verifier.runtime_log.sites import Project, group_records, library_path
from compile_lint.verifier.runtime_log.text_log import split_messages
from tests.helpers import REPO, assert_findings_json, glog, graph_break, run_cli, write_tree

LIBRARY = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"


def duplicate(path: str, line: int, gb_type="Data-dependent branching") -> str:
    return (f"Graph break (user stack suppressed due to duplicate graph break) in user code at {path}:{line}\n"
            f"Graph Break Reason: {gb_type}\n  Explanation: Detected it.")


def recompile(function: str, path: str, line: int, entries: list[tuple[str, list[tuple[str, int, str]]]]) -> str:
    body = ""
    for guard, stack in entries:
        body += f"    - {guard}      # y = x * scale  # m.py:11 in forward\n"
        if stack:
            body += "    - User stack trace:\n" + "".join(
                f'    -   File "{p}", line {n}, in {f}\n    -     code()\n' for p, n, f in stack)
    return f"Recompiling function {function} in {path}:{line}\n    triggered by the following guard failure(s):\n{body}"


def test_a_break_reads_its_type_id_explanation_and_whole_stack():
    record = parse_record(graph_break("/p/m.py", 9, [("/p/run.py", 3, "<module>"), (LIBRARY, 1778, "_call_impl"),
                                                     ("/p/m.py", 9, "forward")]))
    assert isinstance(record, GraphBreakRecord)
    assert (record.gb_type, record.gb_id, record.explanation) == ("Data-dependent branching", "GB0170", "Detected it.")
    assert record.stack == (Frame("/p/run.py", 3, "<module>"), Frame(LIBRARY, 1778, "_call_impl"),
                            Frame("/p/m.py", 9, "forward"))  # the source attribution's frame is not one


def test_a_duplicate_gets_the_stack_of_the_break_it_repeats():
    first = parse_record(graph_break("/lib/x.py", 5, [("/p/m.py", 18, "forward"), ("/lib/x.py", 5, "check")]))
    again = parse_record(duplicate("/lib/x.py", 5))
    assert again.stack == () and again.stack_suppressed
    assert fill_suppressed_stacks([first, again])[1].stack == first.stack


def test_a_break_while_handling_a_break_is_named_after_the_first():
    message = graph_break("/p/h.py", 12, [("/p/h.py", 12, "loop")], gb_type="Failed to trace builtin operator")
    message = message.replace("User code traceback:", "*** While handling this graph break, another graph break "
                              "occurred: ***\ngraph break in loop\n  Explanation: Skipping the frame.\n\n"
                              "User code traceback:")
    record = parse_record(message)
    assert (record.gb_type, record.then) == ("Failed to trace builtin operator", ("graph break in loop",))


def test_a_break_inside_a_higher_order_op_is_named_by_its_own_type():
    message = graph_break("/p/f.py", 6, [("/p/f.py", 6, "forward")], gb_type="Unsupported Tensor.item() call")
    message = message.replace("  Explanation:", "  Higher Order Operator: autograd.Function\n  Explanation:", 1)
    assert parse_record(message).gb_type == "Unsupported Tensor.item() call"


def test_a_frame_dynamo_cannot_resume_is_placed_by_its_stack():
    record = parse_record(
        "Graph break: torch.compile cannot properly resume from this graph break, which results in a skip.\n"
        "torch.compile will skip tracing the frame forward (/p/m.py line 4) and fall back to eager.\n"
        "The graph break occurred in the following user code:\n"
        '  File "/p/m.py", line 7, in forward\n    print(x)\n')
    assert record.location == Frame("/p/m.py", 7, "forward") and record.stack == (record.location,)


def test_a_recompile_reads_the_first_guard_that_is_not_a_size_and_where_it_was_read():
    record = parse_record(recompile("forward", "/p/m.py", 14, [
        ("0/1: tensor 'x' size mismatch at index 0. expected 2, actual 3", []),
        ("0/0: scale == 1.0", [("/p/m.py", 16, "forward")])]))
    assert isinstance(record, RecompileRecord)
    assert (record.function, record.guard, record.stack, record.sizes_only) == (
        Frame("/p/m.py", 14, "forward"), "scale == 1.0", (Frame("/p/m.py", 16, "forward"),), False)
    sizes = parse_record(recompile("f", "/p/m.py", 1, [("0/0: tensor 'x' size mismatch at index 0", [])]))
    assert sizes.sizes_only


def test_messages_are_the_lines_of_one_prefix_whatever_is_interleaved():
    lines = ["step 1", *glog(11, "TRACE starts_line /p/m.py:9 in forward", log="trace_source")]
    first = glog(11, graph_break("/p/m.py", 9, [("/p/m.py", 9, "forward")]))
    second = glog(22, recompile("forward", "/p/m.py", 14, [("0/0: scale == 1.0", [])]), log="recompiles",
                  compile_id="0/1")
    for index in range(max(len(first), len(second))):  # two processes writing to one stderr
        lines += first[index:index + 1] + second[index:index + 1] + (["loss 0.1"] if index == 3 else [])
    messages = split_messages(lines)
    assert [message.split("\n", 1)[0] for message in messages] == [
        "Graph break in user code at /p/m.py:9", "Recompiling function forward in /p/m.py:14"]
    assert "loss 0.1" not in messages[0] and "starts_line" not in messages[0]
    assert [type(record) for record in read_lines(lines, "run.log")] == [GraphBreakRecord, RecompileRecord]


def test_a_log_in_a_custom_format_is_read_from_its_markers():
    message = graph_break("/p/m.py", 9, [("/p/m.py", 9, "forward")])
    again = duplicate("/p/m.py", 9)
    lines = ["epoch 0", f"DEBUG:torch._dynamo.symbolic_convert.__graph_breaks:{message}", "epoch 1",
             f"DEBUG:torch._dynamo.symbolic_convert.__graph_breaks:{again}", "check", "  Explanation: mine"]
    records = read_lines("\n".join(lines).splitlines(), "run.log")
    assert [(r.location.line, r.stack, r.then) for r in records] == [(9, (Frame("/p/m.py", 9, "forward"),), ())] * 2


def test_the_project_is_its_roots_less_installed_and_excluded_directories(tmp_path):
    write_tree(tmp_path, {"pkg/m.py": "", ".venv/lib/python3.11/site-packages/lib/x.py": "",
                          "env/lib/python3.11/site-packages/lib/y.py": "", "build/lib/pkg/m.py": ""})
    project = Project([str(tmp_path)], Config(root=str(tmp_path)))
    assert project.contains(str(tmp_path / "pkg" / "m.py"))
    for outside in (".venv/lib/python3.11/site-packages/lib/x.py", "env/lib/python3.11/site-packages/lib/y.py",
                    "build/lib/pkg/m.py"):
        assert not project.contains(str(tmp_path / outside)), outside
    assert not project.contains("/elsewhere/m.py") and not project.contains("<frozen runpy>")
    installed = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "lib"  # named as the project itself
    assert Project([str(installed)], Config(root=str(tmp_path))).contains(str(installed / "x.py"))
    assert library_path(LIBRARY) == "torch/nn/modules/module.py"
    assert library_path("/usr/lib/python3.11/logging/__init__.py") == "logging/__init__.py"


def test_records_group_by_site_and_reason_with_a_count(tmp_path):
    model = str(tmp_path / "m.py")
    breaks = [graph_break("/lib/x.py", 5, [(model, 18, "forward"), ("/lib/x.py", 5, "check")]),
              duplicate("/lib/x.py", 5), graph_break(model, 20, [(model, 20, "forward")], gb_type="Other")]
    recompiles = [recompile("forward", model, 14, [(f"0/{n}: self.calls == {n}", [(model, 15, "forward")])])
                  for n in range(3)]
    records = read_lines([line for message in breaks + recompiles for line in glog(1, message)], "run.log")
    grouping = group_records(records, Project([str(tmp_path)], Config(root=str(tmp_path))))
    assert [(g.kind, g.site.frame.line, g.count, [f.path for f in g.site.library]) for g in grouping.groups] == [
        ("break", 18, 2, ["/lib/x.py"]), ("break", 20, 1, []), ("recompile", 15, 3, [])]
    assert (grouping.breaks, grouping.recompiles) == (3, 3)


def _log_file(tmp_path, *messages: str) -> str:
    path = tmp_path / "run.log"
    path.write_text("\n".join(line for message in messages for line in glog(7, message)) + "\n")
    return str(path)


def test_findings_in_json_text_and_the_no_rule_mark(tmp_path):
    write_tree(tmp_path, {"m.py": """
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    x = x + 1
                return torch._dynamo.graph_break() or x
        """})
    model = str(tmp_path / "m.py")
    log = _log_file(tmp_path, graph_break(model, 6, [(model, 6, "forward")]),
                    duplicate(model, 6), graph_break(model, 8, [(model, 8, "forward")], gb_type="Unknown kind"))
    done = run_cli("explain-log", "--output-format", "json", log, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    branch, other = assert_findings_json(done.stdout)
    assert (branch["path"], branch["line"], branch["code"], branch["count"]) == ("m.py", 6, "JIT900", 2)
    assert branch["static"][0]["code"] == "JIT101" and branch["fix"] is not None
    assert other["line"] == 8 and "seen at run time, no static rule" not in other["message"]  # JIT617 flags it
    text = run_cli("explain-log", log, cwd=str(tmp_path)).stdout
    assert "m.py:6:12: JIT900 [unsafe fix] graph break seen at run time (2 times)" in text
    assert "    6 |         if x.sum() > 0:" in text
    write_tree(tmp_path, {"m.py": "import torch\n\n\ndef f(x):\n    return x\n"})
    done = run_cli("explain-log", "-q", "--output-format", "concise", log, cwd=str(tmp_path))
    assert done.stdout.count("seen at run time, no static rule") == 2


def test_malformed_and_unreadable_logs_are_one_line_errors(tmp_path):
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "dedicated_log_torch_trace_1.log").write_text(
        'V1203 10:23:52.562000 1 torch/_dynamo/utils.py:2350] {"chromium_event": {}}\n'
        'V1203 10:23:52.562000 1 torch/_dynamo/utils.py:2350] {"artifact": \n')
    (tmp_path / "empty").mkdir()
    (tmp_path / "binary.log").write_bytes(b"V1203 \x00\x01 not text")
    (tmp_path / "latin.log").write_bytes(b"caf\xe9\n")
    (tmp_path / "nowhere.log").write_text(graph_break("/p/m.py", 5, []).replace("/p/m.py:5", "/p/m.py"))
    for name, says in (("trace", "dedicated_log_torch_trace_1.log:2: the event is not JSON"),
                       ("empty", "no log files"), ("binary.log", "NUL bytes"), ("latin.log", "not UTF-8"),
                       ("nowhere.log", "a graph break without its location"), ("missing.log", "no such file")):
        done = run_cli("explain-log", name, cwd=str(tmp_path))
        assert done.returncode == 2, (name, done.stderr)
        assert done.stderr.count("\n") == 1 and says in done.stderr, (name, done.stderr)
    done = run_cli("explain-log", "--project", "nope", "binary.log", cwd=str(tmp_path))
    assert done.returncode == 2 and "--project nope: not a directory" in done.stderr


def test_a_log_without_dynamo_messages_is_clean_with_a_hint(tmp_path):
    (tmp_path / "run.log").write_text("epoch 0 loss 1.0\nepoch 1 loss 0.5\n")
    done = run_cli("explain-log", "--output-format", "json", "run.log", cwd=str(tmp_path))
    assert done.returncode == 0 and json.loads(done.stdout) == []
    assert "TORCH_LOGS=\"graph_breaks,recompiles\"" in done.stderr
    stdin = run_cli("explain-log", "-", cwd=str(tmp_path), input_text="nothing here\n")
    assert stdin.returncode == 0


def test_explain_log_needs_no_torch(tmp_path):
    model = str(tmp_path / "m.py")
    (tmp_path / "m.py").write_text("def forward(x):\n    print(x)\n")
    log = _log_file(tmp_path, graph_break(model, 2, [(model, 2, "forward")], gb_type="Failed to trace builtin"))
    code = ("import sys; sys.modules['torch'] = None; from compile_lint.frontends.cli import main; "
            f"sys.exit(main(['explain-log', '--no-lint', {log!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 1, done.stderr
    assert "m.py:2:5: JIT900 graph break seen at run time: Failed to trace builtin" in done.stdout
