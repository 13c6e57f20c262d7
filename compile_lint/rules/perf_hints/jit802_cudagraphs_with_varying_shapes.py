"""JIT802 cudagraphs-with-varying-shapes: `mode="reduce-overhead"` (CUDA graphs) fed
inputs whose shape changes every call."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Valid
from compile_lint.rules.support.compile_sites import (
    CUDAGRAPH_MODES,
    ENCODER,
    VARYING_LENGTHS,
    CompiledSiteRule,
    compile_call_for,
    compile_mode,
    varying_shape_calls,
)


class CudagraphsWithVaryingShapes(CompiledSiteRule):
    """`mode="reduce-overhead"` (CUDA graphs) fed inputs whose shape changes every call.

    Why: CUDA graphs replay a recording made for one input shape. Each new shape
    records a new graph (and with `dynamic=False`, compiles again), so a loop over
    sequence lengths or batch sizes pays recording on every new size and keeps one
    graph's memory pool per size. Measured on an H200 (torch 2.11): an MLP called with
    8 distinct batch sizes recorded 14 graphs over two passes and ran at 3.4-4.8 ms per
    call, against 0.14 ms per call with one fixed shape.

    Instead: pad inputs to a few bucket sizes (e.g. powers of two) before the call, or
    use the default mode (or `"max-autotune-no-cudagraphs"`) with `dynamic=True`.
    """

    code = "JIT802"
    name = "cudagraphs-with-varying-shapes"
    message = (
        "`{name}` uses CUDA graphs (mode={mode!r}) but is called with a shape that changes in this loop: "
        "each new shape records a new graph; pad to a few bucket sizes or drop the mode"
    )
    invalid = [
        Invalid(
            ENCODER
            + '''

def serve(lengths=(128, 256, 384, 512)):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for n in lengths:
            model(tokens[:, :n])
''',
            calls=VARYING_LENGTHS,
            entry="Encoder",
            lines=[19],
        ),
        Invalid(
            ENCODER
            + '''

class Server:
    def __init__(self):
        self.model = torch.compile(Encoder().eval(), mode="max-autotune")

    def warm(self, batch_sizes=(1, 2, 4, 8)):
        for batch in batch_sizes:
            sample = torch.randn(batch, 64, 8)
            self.model(sample)
''',
            calls="[(torch.randn(b, 16, 8),) for b in (1, 2, 4)]",
            entry="Encoder",
            lines=[21],
        ),
    ]
    valid = [
        Valid(
            ENCODER
            + '''

def serve(steps=4):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for _ in range(steps):
            model(tokens)
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            ENCODER
            + '''

def serve(lengths=(128, 256, 384, 512)):
    model = torch.compile(Encoder().eval(), dynamic=True)
    tokens = torch.randn(4, 512, 8)
    with torch.no_grad():
        for n in lengths:
            model(tokens[:, :n])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
        ),
        Valid(
            ENCODER
            + '''

def serve(batches):
    model = torch.compile(Encoder().eval(), mode="reduce-overhead")
    with torch.no_grad():
        for i in range(len(batches)):
            model(batches[i][:, :512])
''',
            entry="Encoder",
            calls="[(torch.randn(2, 16, 8),)]",
            note="the slice bound is a constant: the shape does not follow the loop",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for call, name in varying_shape_calls(self.context):
            mode = compile_mode(compile_call_for(self.context, call, name))
            if mode in CUDAGRAPH_MODES:
                self.report(call, self.message.format(name=name, mode=mode))

