"""JIT703 opaque-extension-call: A call into a ctypes library or a C++ extension inside forward breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.file.module_facts import NATIVE_LOADERS
from compile_lint.rules.base import Invalid, Rule, Valid


class OpaqueExtensionCall(Rule):
    """A call into a ctypes library or a C++ extension inside forward breaks the graph.

    Why: Dynamo can only trace Python and torch operators. A function of a library
    loaded with `ctypes.CDLL(...)` or `torch.utils.cpp_extension.load(...)` is native
    code it cannot see into, so it stops the graph there ("Unsupported method call"
    for ctypes, measured on torch 2.13); with `fullgraph=True` compilation fails.
    Raw Triton launches (`kernel[grid](...)`) are NOT flagged: Dynamo traces
    user-defined Triton kernels (measured on an H200 with torch 2.11 and Triton 3.6:
    fullgraph compiles, outputs match).

    Instead: wrap the native call in a `torch.library.custom_op` and give it a
    `register_fake` that returns empty outputs of the right shape; Dynamo then puts
    the op in the graph as one opaque node.
    """

    code = "JIT703"
    name = "opaque-extension-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    message = (
        "call into native code (ctypes / C++ extension) inside a compiled region breaks the graph; "
        "wrap it in `@torch.library.custom_op(\"mylib::name\", mutates_args=())` and give it a register_fake"
    )
    steps = ("@torch.library.custom_op(\"mylib::name\", mutates_args=())",)
    invalid = [
        Invalid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class NativeCopy(nn.Module):
                def forward(self, x):
                    out = torch.empty_like(x)
                    libc.memcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), x.numel() * x.element_size())
                    return out * 2
            """,  # noqa: E501 - example code, linted and compared as written
            entry="NativeCopy",
            lines=[13],
        ),
        Invalid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn


            class Packed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lib = ctypes.cdll.LoadLibrary(ctypes.util.find_library("c"))
                    self.fc = nn.Linear(8, 8)

                def _native_copy(self, src):
                    dst = torch.empty_like(src)
                    nbytes = src.numel() * src.element_size()
                    self.lib.memcpy(ctypes.c_void_p(dst.data_ptr()), ctypes.c_void_p(src.data_ptr()), nbytes)
                    return dst

                def forward(self, x):
                    return self._native_copy(self.fc(x).contiguous())
            """,
            entry="Packed",
            lines=[17],
        ),
    ]
    valid = [
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            @torch.library.custom_op("demo_jit703v::native_copy", mutates_args=())
            def native_copy(x: torch.Tensor) -> torch.Tensor:
                out = torch.empty_like(x)
                libc.memcpy(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), x.numel() * x.element_size())
                return out


            @native_copy.register_fake
            def _(x):
                return torch.empty_like(x)


            class NativeCopy(nn.Module):
                def forward(self, x):
                    return native_copy(x.contiguous()) * 2
            """,  # noqa: E501 - example code, linted and compared as written
            entry="NativeCopy",
        ),
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pid = libc.getpid()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    return self.fc(x).relu()
            """,
        ),
        Valid(
            """
            import ctypes
            import ctypes.util

            import torch
            from torch import nn

            libc = ctypes.CDLL(ctypes.util.find_library("c"))


            class Logged(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        libc.getpid()
                    return x.sigmoid()
            """,
            entry="Logged",
        ),
        Valid(
            """
            import torch
            from torch import nn


            class Checkpointed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    state = self.fc.state_dict()
                    return self.fc(x) + state["bias"]
            """,
            entry="Checkpointed",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        receiver = func.value
        if isinstance(receiver, cst.Call) and self.context.qualname(receiver.func) in NATIVE_LOADERS:
            self.report(node)
            return
        handles = self.context.native_handles
        if isinstance(receiver, cst.Name) and receiver.value in handles.names:
            if receiver.value not in self._local_names():
                self.report(node)
        elif (
            isinstance(receiver, cst.Attribute)
            and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self"
            and receiver.attr.value in handles.attributes
        ):
            self.report(node)

    def _local_names(self) -> set[str]:
        function = self.context.function
        if function is None:
            return set()
        params = function.params
        return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
