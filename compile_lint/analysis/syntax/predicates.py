"""The names that decide what Dynamo traces: compile functions, disable decorators, is-compiling and eager predicates.

One table, read by the per-file regions (libcst) and the project index (`ast`); it imports
neither parser, so a run answered from the cache does not load libcst to read it.
"""

from __future__ import annotations

COMPILE_FUNCTIONS = frozenset({"torch.compile", "torch._dynamo.optimize"})
# `torch.jit.ignore` / `torch.jit.unused` only affect TorchScript: Dynamo traces such
# functions (measured on torch 2.13), so they are not listed here.
DISABLE_DECORATORS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch._disable_dynamo",
    }
)
# Custom ops are opaque to Dynamo: it calls them through their fake implementation and
# never traces their bodies, so code inside them is not part of a compiled region.
OPAQUE_OP_DECORATORS = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})
# True while Dynamo traces: `if not is_compiling():` bodies run only eagerly.
COMPILING_PREDICATES = frozenset(
    {
        "torch.compiler.is_compiling",
        "torch.compiler.is_dynamo_compiling",
        "torch._dynamo.is_compiling",
        "torch._dynamo.external_utils.is_compiling",
        "torch._utils.is_compiling",
    }
)
# Library helpers with the same meaning, by their last name, wherever they are imported from:
# transformers' `is_torchdynamo_compiling`, timm's `_is_compiling`, `from torch.compiler import
# is_compiling as compiling`, `torch._dynamo.is_compiling` through an alias. Called without
# arguments: a call with arguments is some other function that happens to share the name.
COMPILING_PREDICATE_NAMES = frozenset(
    {"is_torchdynamo_compiling", "is_compiling", "_is_compiling", "is_dynamo_compiling"}
)
# transformers' `is_tracing(tensor=None)` is True under Dynamo (it calls
# `is_torchdynamo_compiling()`) and False in eager runs; `torch.jit.is_tracing` is not it.
TRACING_HELPER = ("is_tracing", ("utils", "import_utils"))
# False while Dynamo traces: `if is_scripting():` bodies never run under torch.compile, and
# neither do `if is_exporting():` ones (True only under torch.export).
EAGER_PREDICATES = frozenset(
    {
        "torch.jit.is_scripting",
        "torch.jit.is_tracing",
        "torch.compiler.is_exporting",
        "torch._dynamo.is_exporting",
    }
)
EAGER_PREDICATE_NAMES = frozenset({"is_torchdynamo_exporting"})
MODULE_BASE_PREFIX = "torch.nn."
DEFAULT_MODULE_BASE_NAMES = frozenset({"PreTrainedModel", "ModelMixin", "LightningModule"})
