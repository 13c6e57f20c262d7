"""Codes that are not rules, documented beside the rules: JIT000, JIT001 and the verifier's JIT900-JIT905.

JIT000 is a file compile-lint cannot read as Python; JIT001 a `# noqa` code that suppressed
nothing (engine/suppressions.py, off by default); JIT900-JIT905 are what
`compile-lint verify` saw the real compiler do (compile_lint/verifier/report.py makes them;
JIT900 and JIT901 also `compile-lint explain-log`, from a run's log;
a test keeps the two lists of names in step). `--explain`, docs/rules.md and each
finding's `url` take their text from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from compile_lint.core.diagnostics import CODE_PREFIX

SYNTAX_ERROR_CODE = CODE_PREFIX + "000"  # the file does not parse: nothing in it was checked


@dataclass(frozen=True)
class OtherCode:
    """A finding code with no rule class behind it."""

    code: str
    name: str
    kind: str
    summary: str  # one line: what the finding means
    text: str  # "Why:" and "Instead:" paragraphs, as a rule's docstring has them
    source: str  # the file that reports it


OTHER_CODES: tuple[OtherCode, ...] = (
    OtherCode(
        "JIT000", "syntax-error", "error",
        "The file does not parse (or nests too deeply to analyse), so none of it was checked.",
        "Why: compile-lint reads the file as Python source with libcst; a file Python cannot\n"
        "parse cannot be compiled by torch.compile either. The finding sits where Python's own\n"
        "parser reports the error.\n\n"
        "Instead: fix the syntax error (`python -m py_compile FILE` shows the same one). A file\n"
        "nested too deeply to analyse is reported at line 1: split the expression. Python itself\n"
        "refuses more than 200 nested brackets and an expression about 3,000 operators deep.",
        "compile_lint/engine/lint.py",
    ),
    OtherCode(
        "JIT001", "unused-noqa", "perf",
        "A `# noqa: CODES` directive lists a compile-lint code that suppressed nothing on its line.",
        "Why: a stale directive (the finding was fixed, or the code is a typo for another) hides\n"
        "nothing today and would silently hide a new finding of that code on the line tomorrow;\n"
        "this is ruff's RUF100. Off by default: select it with `--extend-select JIT001`. Only\n"
        "codes this run checks are reported (not other tools' codes such as `E501`, not codes\n"
        "of rules that are off), and never a bare `# noqa` or a file-level directive.\n\n"
        "Instead: drop the unused codes; the safe fix removes them, or the whole directive when\n"
        "none is left (an explanation after the codes stays as a plain comment):\n\n"
        "    if x.sum() > 0:  # noqa: JIT101, JIT203   ->   if x.sum() > 0:  # noqa: JIT101",
        "compile_lint/engine/suppressions.py",
    ),
    OtherCode(
        "JIT900", "runtime-graph-break", "break",
        "Dynamo broke the graph at this line: seen by `compile-lint verify` running the target, or read by "
        "`compile-lint explain-log` from a run's log.",
        "Why: each break splits the compiled code into separately compiled pieces with Python\n"
        "running in between; the message names Dynamo's graph-break type and its GB id. A static\n"
        "finding at the same line is marked confirmed (verify); explain-log names it and carries\n"
        "its fix, or says \"seen at run time, no static rule\", counts the times the log shows the\n"
        "break, and reports a break inside an installed library at the project's call into it.\n\n"
        "Instead: `compile-lint --explain CODE` for the static finding at that line, if any, says\n"
        "what to write instead; otherwise the graph-break page of the GB id does.",
        "compile_lint/verifier/report.py",
    ),
    OtherCode(
        "JIT901", "runtime-recompile", "recompile",
        "A recompile and the guard that failed: seen by `compile-lint verify` over the example calls, or read "
        "by `compile-lint explain-log` from a run's log.",
        "Why: every recompile costs a full compile, and after the recompile limit (8) the\n"
        "function runs eagerly. Sizes that vary across the calls are marked dynamic first, so a\n"
        "recompile on tensor sizes alone (automatic dynamic) is not reported; explain-log does not\n"
        "report one either, and groups the recompiles of one line and guard (`self.calls == 0`,\n"
        "`self.calls == 1`) into one finding with a count.\n\n"
        "Instead: keep the value the guard names out of what Dynamo specialises on: pass it as a\n"
        "tensor, or mark it dynamic; the static finding at that line, if any, says how.",
        "compile_lint/verifier/report.py",
    ),
    OtherCode(
        "JIT902", "runtime-fullgraph-failure", "break",
        "`torch.compile(fullgraph=True)` fails on the target, and no graph break accounts for it.",
        "Why: some constructs are hard errors under `fullgraph=True` (e.g. `bool()` of a tensor)\n"
        "rather than graph breaks; the message carries the compiler's error.\n\n"
        "Instead: fix the construct at the reported line; without `fullgraph=True` it may still\n"
        "break the graph.",
        "compile_lint/verifier/report.py",
    ),
    OtherCode(
        "JIT903", "compiled-output-mismatch", "error",
        "The compiled target's outputs differ from eager beyond the dtype's tolerance.",
        "Why: the compiled model computes something else than the eager one (float32 1e-4,\n"
        "bf16 1.6e-2, fp16 1e-3, float64 1e-7, integers exact), so the compiled result cannot be\n"
        "trusted.\n\n"
        "Instead: find the op that diverges (compare with `backend=\"eager\"` and\n"
        "`backend=\"aot_eager\"`); report a compiler bug when your code is not at fault.",
        "compile_lint/verifier/report.py",
    ),
    OtherCode(
        "JIT904", "target-failed", "error",
        "The target could not be run: it raised, timed out, ran out of memory or failed to compile.",
        "Why: nothing could be measured for this target, so its graph breaks and recompiles are\n"
        "unknown. The message carries the error.\n\n"
        "Instead: make the factory and its example calls run eagerly first\n"
        "(`model(*call)` outside torch.compile), then verify again.",
        "compile_lint/verifier/report.py",
    ),
    OtherCode(
        "JIT905", "compiled-slower-than-eager", "perf",
        "With `--bench`: the default compiled build was slower than eager on an example call.",
        "Why: graph breaks glue compiled pieces with eager Python, recompiles add compile time,\n"
        "and small calls may not repay the compiled wrapper's launch overhead; the message says\n"
        "which applies.\n\n"
        "Instead: remove the breaks and recompiles first; for launch-bound calls on CUDA, try\n"
        "`mode=\"reduce-overhead\"` (CUDA graphs).",
        "compile_lint/verifier/report.py",
    ),
)
OTHER_CODES_BY_CODE = {entry.code: entry for entry in OTHER_CODES}
