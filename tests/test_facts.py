"""Facts: tensors, shapes, Python values, data read out of tensors."""

import libcst as cst
import pytest

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.testing import make_context

MODEL = """
import torch
import torch.nn.functional as F
from torch import nn
from typing import Optional

class M(nn.Module):
    def __init__(self, dim=8, eps=1e-6):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))
        self.register_buffer("inv_freq", torch.ones(dim))
        self.use_bias = True

    def forward(self, x, mask=None, temperature=1.0, y: torch.Tensor = None, flag: bool = False,
                maybe: Optional[torch.Tensor] = None):
        h = self.proj(x)
        s = h.sum()
        n = x.shape[0]
        d = x.dim()
        v = s.item()
        a, b = h.chunk(2, dim=-1)
        z = helper(h)
        for layer in [self.proj]:
            pass
        return h
    def other(self, q):
        return q

def helper(t):
    return t * 2
"""

CASES = [
    ("x", Kind.TENSOR),
    ("mask", Kind.MAYBE_TENSOR),
    ("temperature", Kind.PY),
    ("y", Kind.TENSOR),
    ("flag", Kind.PY),
    ("maybe", Kind.MAYBE_TENSOR),
    ("h", Kind.TENSOR),
    ("s > 0", Kind.TENSOR),
    ("(x > 0).any()", Kind.TENSOR),
    ("torch.isnan(x).any()", Kind.TENSOR),
    ("F.relu(x)", Kind.TENSOR),
    ("n", Kind.SHAPE),
    ("d == 4", Kind.SHAPE),
    ("x.ndim", Kind.SHAPE),
    ("x.size(1)", Kind.SHAPE),
    ("len(x)", Kind.SHAPE),
    ("v", Kind.DATA),
    ("float(s)", Kind.DATA),
    ("x.tolist()", Kind.DATA),
    ("mask is not None", Kind.PY),
    ("self.training", Kind.PY),
    ("self.eps", Kind.PY),
    ("self.use_bias", Kind.PY),
    ("self.scale", Kind.TENSOR),
    ("self.inv_freq", Kind.TENSOR),
    ("self.proj", Kind.MODULE),
    ("x.dtype == torch.float16", Kind.PY),
    ("isinstance(x, torch.Tensor)", Kind.PY),
    ("a", Kind.TENSOR),
    ("z", Kind.TENSOR),
    ("x.numpy()", Kind.NDARRAY),
    ("torch.is_tensor(x)", Kind.PY),
    ("x.is_floating_point()", Kind.PY),
]


@pytest.mark.parametrize("expr,expected", CASES)
def test_kinds_in_forward(expr, expected):
    context = make_context(MODEL)
    forward = next(f for f in context.regions.functions if f.name.value == "forward")
    assert context.facts.kind(cst.parse_expression(expr), forward) is expected


def test_helper_parameters_take_the_kind_of_their_call_sites():
    context = make_context(MODEL)
    helper = next(f for f in context.regions.functions if f.name.value == "helper")
    assert context.facts.param_kind(helper, "t") is Kind.TENSOR


def test_self_referential_assignments_keep_the_tensor_kind():
    code = """
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x):
            scores = x @ x.T
            scores = scores.masked_fill(scores > 1, 0.0)
            scores = torch.nan_to_num(scores)
            return scores
    """
    context = make_context(code)
    forward = next(iter(context.regions.functions))
    assert context.facts.name_kind("scores", forward) is Kind.TENSOR


def test_calling_self_in_a_module_method_gives_what_forward_returns():
    """`out = self(out)` in a module's `generate` runs forward (measured on torch 2.13: a tensor `if` on it
    breaks); in a plain class, calling `self` says nothing."""
    code = """
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def forward(self, x):
            return x.sum(-1)

        def generate(self, x):
            return self(x)

    class Plain:
        def __call__(self, x):
            return 3

        def run(self, x):
            return self(x)

    compiled = torch.compile(Decoder().generate)
    """
    context = make_context(code)
    functions = {statement.name.value: statement for cls in context.module.body if isinstance(cls, cst.ClassDef)
                 for statement in cls.body.body if isinstance(statement, cst.FunctionDef)}
    assert context.facts.kind(cst.parse_expression("self(x)"), functions["generate"]) is Kind.TENSOR
    assert context.facts.kind(cst.parse_expression("self(x)"), functions["run"]) is Kind.UNKNOWN


def test_torch_size_annotated_parameters_are_shapes():
    # transformers' RoFormer/BART positional embeddings: forward(self, input_ids_shape: torch.Size, ...)
    code = """
    import torch
    from torch import nn

    class PositionalEmbedding(nn.Embedding):
        def forward(self, input_ids_shape: torch.Size, past_key_values_length: int = 0):
            bsz, seq_len = input_ids_shape[:2]
            positions = torch.arange(past_key_values_length, past_key_values_length + seq_len)
            return super().forward(positions)
    """
    context = make_context(code)
    forward = next(iter(context.regions.functions))
    assert context.facts.param_kind(forward, "input_ids_shape") is Kind.SHAPE
    assert context.facts.name_kind("seq_len", forward) is Kind.SHAPE


def test_cache_methods_on_optional_parameters_are_not_tensors():
    # transformers BigBird/Mamba: `past_key_values=None` is a cache object, not a tensor.
    code = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def forward(self, x, past_key_values=None, mask=None):
            cached = past_key_values.get_seq_length(0)
            recording = past_key_values.is_recording_past(0)
            device = mask.get_device()
            contiguous = mask.is_contiguous()
            return x
    """
    context = make_context(code)
    forward = next(iter(context.regions.functions))
    assert context.facts.name_kind("cached", forward) is Kind.UNKNOWN
    assert context.facts.name_kind("recording", forward) is Kind.UNKNOWN
    assert context.facts.name_kind("device", forward) is not Kind.UNKNOWN
    assert context.facts.name_kind("contiguous", forward) is not Kind.UNKNOWN


def test_torch_div_of_sizes_is_a_size():
    # Longformer/LED chunking: measured to compile with fullgraph=True, static and dynamic shapes.
    code = """
    import torch
    from torch import nn

    class Chunker(nn.Module):
        def forward(self, x):
            seq_len = x.size(1)
            chunks_count = torch.div(seq_len, 4, rounding_mode="trunc") - 1
            scaled = torch.div(x, 4)
            return x.new_zeros((x.size(0), chunks_count + 1, 4)), scaled
    """
    context = make_context(code)
    forward = next(iter(context.regions.functions))
    assert context.facts.name_kind("chunks_count", forward) is Kind.SHAPE
    assert context.facts.name_kind("scaled", forward) is Kind.TENSOR


def test_tuple_annotated_parameters_are_sequences_not_tensors():
    code = """
    from typing import Tuple
    import torch
    from torch import nn

    class PosConv(nn.Module):
        def forward(self, x, size: Tuple[int, int], pad: tuple = (0, 0)):
            H, W = size
            return x
    """
    context = make_context(code)
    forward = next(iter(context.regions.functions))
    assert context.facts.param_kind(forward, "size") is Kind.LIST
    assert context.facts.param_kind(forward, "pad") is Kind.LIST
    assert not context.facts.name_kind("H", forward).tensorish


# ----- across calls: argument kinds flow into callees, return kinds flow back ------------------

ACROSS_CALLS = """
import random

import torch
from torch import nn


class Rotary(nn.Module):
    def forward(self, seqlen: int, offset):
        return torch.arange(seqlen) + offset


class Patch(nn.Module):
    def forward(self, x):
        _, _, height, width = x.shape
        return x.flatten(2), height, width


class Block(nn.Module):
    def forward(self, x, mask=None):
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = Rotary()
        self.patch = Patch()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def helper(self, grid):
        return grid[:, 0]

    def forward(self, x: torch.Tensor, grid, sizes=None):
        longest = grid.max()
        emb = self.rotary(longest, x.shape[0])
        tokens, height, width = self.patch(x)
        first = self.patch(x)[0]
        for block in self.blocks:
            x = block(x, mask=grid)
        rows = self.helper(grid)
        column = sizes[:, 0]
        draw = random.uniform(0, 1)
        return x
"""


def _function(context, name, owner=None):
    return next(f for f in context.regions.functions
                if f.name.value == name and (owner is None or context.regions.owner_class[f].name.value == owner))


def test_argument_kinds_flow_into_submodule_forwards():
    context = make_context(ACROSS_CALLS)
    rotary = _function(context, "forward", "Rotary")
    # every call passes a 0-d tensor: a tensor, whatever the annotation says
    assert context.facts.param_kind(rotary, "seqlen") is Kind.TENSOR
    assert context.argument_kind("seqlen", rotary) is Kind.TENSOR
    assert context.facts.param_kind(rotary, "offset") is Kind.SHAPE  # x.shape[0]
    block = _function(context, "forward", "Block")
    assert context.argument_kind("x", block) is Kind.TENSOR  # `for block in self.blocks: block(x, ...)`
    # `grid` is untyped: a tensor by default in Model.forward, but no evidence to pass on
    assert context.argument_kind("mask", block) is Kind.UNKNOWN
    assert context.facts.param_kind(block, "mask") is Kind.MAYBE_TENSOR
    model = _function(context, "forward", "Model")
    assert context.argument_kind("x", model) is None  # an entry point: nobody in the file calls it


def test_return_kinds_flow_back_per_tuple_item():
    context = make_context(ACROSS_CALLS)
    forward = _function(context, "forward", "Model")
    facts = context.facts
    assert facts.name_kind("tokens", forward) is Kind.TENSOR
    assert facts.name_kind("height", forward) is Kind.SHAPE
    assert facts.name_kind("width", forward) is Kind.SHAPE
    assert facts.name_kind("first", forward) is Kind.TENSOR
    assert facts.name_kind("emb", forward) is Kind.TENSOR
    assert facts.name_kind("rows", forward) is Kind.TENSOR


def test_optional_tensors_indexed_on_several_axes_and_random_draws_are_tensors():
    context = make_context(ACROSS_CALLS)
    forward = _function(context, "forward", "Model")
    assert context.facts.name_kind("sizes", forward) is Kind.MAYBE_TENSOR
    assert context.facts.name_kind("column", forward) is Kind.TENSOR
    assert context.facts.name_kind("draw", forward) is Kind.TENSOR  # Dynamo traces random.uniform as a tensor


FLOW = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, scale=1.0):
        skip = False
        if self.training:
            skip = torch.rand([]) < 0.5
        a = skip
        n = x.sum()
        n = 4
        b = n
        if not torch.compiler.is_compiling():
            scale = x.std()
        c = scale
        total = 0
        for row in x:
            total = total + row.sum()
        d = total
        return x
"""


def _read(context, function, target):
    """The kind of the value assigned to `target` (a read of another local)."""
    for statement in function.body.body:
        line = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if isinstance(line, cst.Assign) and line.targets[0].target.value == target:
            return context.facts.kind(line.value, function), line.value
    raise AssertionError(target)


def test_reads_see_the_bindings_that_reach_them():
    context = make_context(FLOW)
    forward = next(iter(context.regions.functions))
    kind, node = _read(context, forward, "a")
    assert kind is Kind.TENSOR  # a tensor on the path through `if self.training:`
    assert [type(s).__name__ for s in context.facts.conditional_tensor_bindings(node)] == ["Assign"]
    assert context.modes_at(node, forward) == {"training"}
    assert _read(context, forward, "b")[0] is Kind.PY  # `n = 4` killed the tensor
    assert _read(context, forward, "c")[0] is Kind.PY  # the eager-only binding never happens under compile
    assert _read(context, forward, "d")[0] is Kind.TENSOR  # loop-carried accumulation
    assert context.facts.name_kind("n", forward) is Kind.MAYBE_TENSOR  # flow-insensitive: both bindings
