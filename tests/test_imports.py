"""Imports are resolved by meaning, not spelling."""

import libcst as cst

from compile_lint.analysis.syntax.imports import ImportMap
from compile_lint.testing import make_context


def _qualname(code: str, expr: str) -> str:
    context = make_context(code)
    return context.imports.qualname(cst.parse_expression(expr))


def test_aliases_resolve_to_qualified_names():
    code = """
    import torch as T
    from torch import nn
    import numpy as np
    from torch.nn import functional as F
    import torch.nn.functional as F2
    """
    assert _qualname(code, "T.where") == "torch.where"
    assert _qualname(code, "nn.Module") == "torch.nn.Module"
    assert _qualname(code, "np.random.rand") == "numpy.random.rand"
    assert _qualname(code, "F.relu") == "torch.nn.functional.relu"
    assert _qualname(code, "F2.relu") == "torch.nn.functional.relu"


def test_dotted_import_binds_its_head():
    assert _qualname("import torch.nn.functional\n", "torch.nn.functional.gelu") == "torch.nn.functional.gelu"


def test_relative_imports_keep_their_dots():
    qualname = _qualname("from .modeling_utils import PreTrainedModel\n", "PreTrainedModel")
    assert qualname == ".modeling_utils.PreTrainedModel"


def test_builtins_resolve_unless_shadowed():
    assert _qualname("x = 1\n", "print") == "builtins.print"
    assert _qualname("def print(*a):\n    pass\n", "print") is None
    assert _qualname("x = 1\n", "undefined_name") is None


def test_imports_inside_functions_count():
    assert _qualname("def f():\n    import torch as tt\n", "tt.cat") == "torch.cat"


def test_local_name_for_uses_existing_imports():
    imports = ImportMap(cst.parse_module("import torch as T\nfrom torch import nn\n"))
    assert imports.local_name_for("torch.where") == "T.where"
    assert imports.local_name_for("torch.nn.Linear") in ("nn.Linear", "T.nn.Linear")
    assert ImportMap(cst.parse_module("import numpy\n")).local_name_for("torch.where") is None
