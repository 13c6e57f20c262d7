"""JIT804 varying-shapes-without-dynamic: A compiled model called with shapes that follow a loop,
compiled without `dynamic=`."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Valid
from compile_lint.rules.support.compile_sites import (
    CUDAGRAPH_MODES,
    ENCODER,
    VARYING_LENGTHS,
    CompiledSiteRule,
    compile_call_for,
    compile_keyword,
    compile_mode,
    varying_shape_calls,
)


class VaryingShapesWithoutDynamic(CompiledSiteRule):
    """A compiled model called with shapes that follow a loop, compiled without `dynamic=`.

    Why: by default torch.compile specializes on the first input's shapes; the first
    call with a different size recompiles with that dimension dynamic ("automatic
    dynamic"). Measured on torch 2.13: three sequence lengths cost two compiles without
    `dynamic=`, one with `dynamic=True`. Cheap when it happens once, but it is a
    compile stall in the middle of serving, and each compile of a large model takes
    seconds to minutes.

    Instead: `torch.compile(model, dynamic=True)`, or mark the varying dimension with
    `torch._dynamo.mark_dynamic(x, dim)` before the first call. The fix (safe: outputs
    are the same) adds `dynamic=True`. Not reported for CUDA-graph modes (JIT802).
    """

    code = "JIT804"
    name = "varying-shapes-without-dynamic"
    fix_applicability = "safe"
    message = (
        "`{name}` is called with a shape that changes in this loop but compiled without dynamic=: "
        "the first new shape triggers a recompile; pass dynamic=True or mark_dynamic the dimension"
    )
    invalid = [
        Invalid(
            ENCODER
            + '''

def benchmark(lengths=(128, 256, 512)):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        for seq_len in lengths:
            model(torch.randn(8, seq_len, 8))
''',
            fixed=ENCODER
            + '''

def benchmark(lengths=(128, 256, 512)):
    model = torch.compile(Encoder().eval(), dynamic=True)
    with torch.no_grad():
        for seq_len in lengths:
            model(torch.randn(8, seq_len, 8))
''',
            calls=VARYING_LENGTHS,
            entry="Encoder",
            lines=[18],
        ),
    ]
    valid = [
        Valid(
            ENCODER
            + '''

def benchmark(lengths=(128, 256, 512)):
    model = torch.compile(Encoder().eval(), dynamic=True)
    with torch.no_grad():
        for seq_len in lengths:
            model(torch.randn(8, seq_len, 8))
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            ENCODER
            + '''

def benchmark(seeds=(0, 1, 2)):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        for seed in seeds:
            torch.manual_seed(seed)
            model(torch.randn(8, 128, 8))
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            ENCODER
            + '''

def evaluate(loader):
    model = torch.compile(Encoder().eval(), dynamic=False)
    with torch.no_grad():
        for step, batch in enumerate(loader):
            model(batch[:, : 64 * step])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
            note="dynamic=False is an explicit choice",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        reported: set[int] = set()  # by id of the compile call: one finding per compiled model
        for call, name in varying_shape_calls(self.context):
            compile_call = compile_call_for(self.context, call, name)
            if compile_call is None or compile_keyword(compile_call, "dynamic") is not None:
                continue
            if compile_mode(compile_call) in CUDAGRAPH_MODES or id(compile_call) in reported:
                continue
            reported.add(id(compile_call))
            self.report(call, self.message.format(name=name), fix=self._fix(compile_call))

    def _fix(self, compile_call: cst.Call) -> FixPlan:
        args = list(compile_call.args)
        last = args[-1]
        dynamic = cst.Arg(keyword=cst.Name("dynamic"), value=cst.Name("True"),
                          equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        if isinstance(last.comma, cst.MaybeSentinel):
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(dynamic)
        else:
            # A trailing comma (one argument per line): the new argument takes over the last
            # comma, which leads to the closing parenthesis; the last argument takes the
            # comma between arguments, which leads to the next argument's indentation.
            between = args[-2].comma if len(args) > 1 else last.comma
            args[-1] = last.with_changes(comma=between)
            args.append(dynamic.with_changes(comma=last.comma))
        return FixPlan([(compile_call, compile_call.with_changes(args=args))], "Pass dynamic=True", "safe")

