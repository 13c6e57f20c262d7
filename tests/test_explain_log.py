"""`compile-lint explain-log`: reading Dynamo's messages.

The messages here are spelled as torch 2.13 writes them (torch/_dynamo/symbolic_convert.py,
convert_frame.py, guards.py, torch/_logging/_internal.py); tests/test_explain_log_runs.py
reads logs the installed torch really writes.
"""

from __future__ import annotations

from compile_lint.verifier.runtime_log.reading import read_lines
from compile_lint.verifier.runtime_log.records import (
    Frame,
    GraphBreakRecord,
    RecompileRecord,
    fill_suppressed_stacks,
    parse_record,
)
from compile_lint.verifier.runtime_log.text_log import split_messages
from tests.helpers import glog, graph_break

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
    lines = ["epoch 0", f"DEBUG:torch._dynamo.symbolic_convert.__graph_breaks:{message}", "epoch 1"]
    records = read_lines("\n".join(lines).splitlines(), "run.log")
    assert [(r.location.line, r.stack) for r in records] == [(9, (Frame("/p/m.py", 9, "forward"),))]
