"""Recompile-trigger rules (JIT5xx): edge cases, look-alikes and fix proofs beyond the examples."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.rules.recompile.jit501_mutated_module_state import MutatedModuleState
from compile_lint.rules.recompile.jit504_python_scalar_argument import PythonScalarArgument
from compile_lint.settings.config import Config
from tests.helpers import run_cli, write_tree


def _lint(code: str, rule: str):
    return lint_text(textwrap.dedent(code).lstrip("\n"), "model.py", Config(select=(rule,)))


def _codes_and_lines(code: str, rule: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in _lint(code, rule)]


def _fix(code: str, rule: str, unsafe: bool = False) -> str:
    outcome = fix_text(textwrap.dedent(code).lstrip("\n"), "model.py", Config(select=(rule,)), unsafe=unsafe)
    assert outcome.error is None
    return outcome.text


# ----- JIT501 mutated-module-state ------------------------------------------------

COUNTER_MODULE = """
import torch
from torch import nn

class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 3
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        self.calls += 1
        self.calls -= 2
        self.calls = self.calls + 3
        return self.fc(x) * self.calls
"""


def test_counter_fix_converges_to_one_buffer_updated_in_place_and_is_unsafe():
    assert _fix(COUNTER_MODULE, "JIT501") == textwrap.dedent(COUNTER_MODULE).lstrip("\n")
    fixed = _fix(COUNTER_MODULE, "JIT501", unsafe=True)
    assert 'self.register_buffer("calls", torch.tensor(3), persistent=False)' in fixed
    assert "self.calls = 3" not in fixed
    # in place: CUDA graphs replay into the buffer, which a rebinding would make a graph output
    assert "self.calls.add_(1)\n        self.calls.sub_(2)\n        self.calls.add_(3)\n" in fixed
    assert "self.calls =" not in fixed and "+=" not in fixed and "-=" not in fixed
    assert _lint(fixed, "JIT501") == []


@pytest.mark.parametrize(
    "update, in_place",
    [
        ("self.step *= 2", "self.step.mul_(2)"),
        ("self.step -= x.shape[0]", "self.step.sub_(x.shape[0])"),
        ("self.step += (x.shape[0] - 1)", "self.step.add_(x.shape[0] - 1)"),
        ("self.step = 2 + self.step", "self.step.add_(2)"),
        ("self.step = 10 - self.step", "self.step.copy_(10 - self.step)"),
        ("self.step += 1; y = x", "self.step.add_(1); y = x"),
    ],
)
def test_every_counter_update_shape_becomes_one_in_place_call(update, in_place):
    code = _counter_module(f"{update}\n        return x * self.step")
    fixed = _fix(code, "JIT501", unsafe=True)
    assert f"        {in_place}\n" in fixed, fixed
    assert _lint(fixed, "JIT501") == []


def test_counter_value_after_n_calls_matches_eager_and_compiled():
    torch = pytest.importorskip("torch")
    from compile_lint.verifier.probe import load_module_from_source

    original = load_module_from_source(textwrap.dedent(COUNTER_MODULE).lstrip("\n"))
    fixed = load_module_from_source(_fix(COUNTER_MODULE, "JIT501", unsafe=True))
    torch.manual_seed(0)
    before = original.Counter()
    torch.manual_seed(0)
    after = fixed.Counter()
    torch._dynamo.reset()
    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()
    compiled = torch.compile(after, backend=counter, fullgraph=True)
    x = torch.randn(4, 8)
    with torch.no_grad():
        for _ in range(11):
            expected = before(x)
            torch.testing.assert_close(compiled(x), expected)
    assert int(after.calls) == before.calls == 3 + 11 * 2
    assert after.calls.dtype == torch.long
    assert counter.frame_count == 1, "the buffer counter must not recompile"
    assert "calls" not in after.state_dict(), "a non-persistent buffer keeps checkpoints unchanged"


WARMUP_MODULE = """
import torch
from torch import nn

class Warmup(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.warmup = 4
        self.step = 0

    def forward(self, x):
        self.step += 1
        scale = max(0.0, min(1.0, (self.step - 1) / self.warmup))
        return self.fc(x) * scale + x * self.step
"""


@pytest.mark.parametrize("backend", [None, "eager", "aot_eager"])
def test_fixed_counter_stays_the_same_buffer_tensor_across_calls(backend):
    """CUDA graphs replay into the buffer's memory: a fix that rebinds it (`self.step =
    self.step + 1`) makes it a graph output the next replay overwrites. After every call,
    eager or compiled, the buffer must be the same tensor, in the same memory, advanced."""
    torch = pytest.importorskip("torch")
    from compile_lint.verifier.probe import load_module_from_source

    torch.manual_seed(0)
    model = load_module_from_source(_fix(WARMUP_MODULE, "JIT501", unsafe=True)).Warmup()
    buffer, address = model.step, model.step.data_ptr()
    torch._dynamo.reset()
    run = model if backend is None else torch.compile(model, backend=backend, fullgraph=True)
    x = torch.randn(4, 8)
    with torch.no_grad():
        for call in range(1, 4):
            run(x)
            assert model.step is buffer and model.get_buffer("step") is buffer
            assert model.step.data_ptr() == address
            assert int(model.step) == call and model.step.dtype == torch.long


@pytest.mark.parametrize("built_under", ["plain", "inference_mode", "no_grad"])
@pytest.mark.parametrize("called_under", ["plain", "inference_mode", "no_grad", "train"])
def test_buffer_fix_runs_and_keeps_outputs_wherever_the_model_is_built_and_called(built_under, called_under):
    """The fixed counter works where the int did, except where an in-place update cannot:
    a buffer made under inference_mode is an inference tensor, which raises on an in-place
    update once called outside it (the documented price of staying one tensor)."""
    torch = pytest.importorskip("torch")
    import contextlib

    from torch._dynamo.testing import CompileCounter

    from compile_lint.verifier.probe import load_module_from_source

    fixed_source = _fix(WARMUP_MODULE, "JIT501", unsafe=True)
    assert "scale = torch.clamp(torch.clamp((self.step - 1) / self.warmup, max=1.0), min=0.0)" in fixed_source
    contexts = {"plain": contextlib.nullcontext, "inference_mode": torch.inference_mode,
                "no_grad": torch.no_grad, "train": contextlib.nullcontext}
    models = []
    for source in (textwrap.dedent(WARMUP_MODULE).lstrip("\n"), fixed_source):
        torch.manual_seed(0)
        with contexts[built_under]():
            model = load_module_from_source(source).Warmup()
        model.train(called_under == "train")
        models.append(model)
    original, fixed = models
    x = torch.randn(4, 8)
    if built_under == "inference_mode" and called_under != "inference_mode":
        with contexts[called_under](), pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
            fixed(x)
        return
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fixed, backend=counter, fullgraph=True)
    with contexts[called_under]():
        for _ in range(7):
            expected, eager_fixed = original(x), fixed(x)
            torch.testing.assert_close(eager_fixed, expected, rtol=0, atol=0)
        for _ in range(7):
            torch.testing.assert_close(compiled(x), original(x))
    assert int(fixed.step) == original.step == 14
    assert counter.frame_count == 1, "the buffer counter must not recompile"


def test_counter_read_as_number_outside_forward_makes_the_fix_unsafe():
    code = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x

        def should_log(self):
            return self.calls % 100 == 0
    """
    (finding,) = _lint(code, "JIT501")
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert _fix(code, "JIT501") == textwrap.dedent(code).lstrip("\n")
    assert "register_buffer" in _fix(code, "JIT501", unsafe=True)


@pytest.mark.parametrize(
    "reader",
    [
        'return f"{self.step} steps"',  # prints `tensor(3) steps`
        'return "%d steps" % self.step',
        "return str(self.step)",
        "return isinstance(self.step, int)",
    ],
)
def test_counter_formatted_or_type_checked_outside_forward_gets_no_fix(reader):
    code = _counter_module("self.step += 1\n        return x * self.step", describe=reader)
    assert [d.fix for d in _lint(code, "JIT501")] == [None]


@pytest.mark.parametrize(
    "body",
    [
        "if self.step % 2 == 0:\n            x = x * 2",  # a tensor here would be a data-dependent branch
        "x = x[: self.step]",
        "x = x.view(self.step, -1)",
    ],
)
def test_counter_read_as_number_in_forward_gets_no_fix(body):
    findings = _lint(_counter_module(f"self.step += 1\n        {body}\n        return x"), "JIT501")
    assert [d.code for d in findings] == ["JIT501"]
    assert findings[0].fix is None


def test_counter_reset_elsewhere_is_refilled_and_a_divided_one_gets_no_fix():
    reset = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            self.step += 1
            return x

        def reset(self):
            self.step = 0
    """
    fixed = _fix(reset, "JIT501", unsafe=True)
    assert "        self.step.fill_(0)\n" in fixed
    halved = reset.replace("self.step = 0\n\n        def forward", "self.step = 8\n\n        def forward").replace(
        "self.step += 1", "self.step //= 2").replace("        def reset(self):\n            self.step = 0\n", "")
    assert [d.fix for d in _lint(halved, "JIT501")] == [None]


@pytest.mark.parametrize(
    "body",
    [
        "self.step += 0.5\n        return x",  # Python makes it a float64, a tensor a float32
        "self.step += 1\n        scale = self.step / self.warmup\n        if scale < 1:\n"
        "            x = x * 2\n        return x",  # the local is read as a number
        "self.step += 1\n        return x * min(self.limit, self.step)",  # bound is not a literal
        "self.step += 1\n        return x * (self.step * 0.1)",  # 0.1 is not a float32: two roundings
        "self.step += 1\n        return x * (self.step / self.warmup / 2)",  # two roundings
        "self.step += 1\n        return torch.full_like(x, self.step)",  # passed to a function
        "self.step += 1\n        return x * math.cos(self.step / self.warmup)",
        "self.step += 1\n        return x * (1 / self.step)",  # Python raises at 0, a tensor gives inf
    ],
)
def test_counter_in_python_arithmetic_that_a_tensor_would_change_gets_no_fix(body):
    findings = _lint(_counter_module(body), "JIT501")
    assert [d.code for d in findings] == ["JIT501"] and findings[0].fix is None


def _counter_module(forward_body: str, describe: str = "return None") -> str:
    """A module with an int counter `self.step`, the given forward body and a `describe` method."""
    return f"""
import math
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, limit=2):
        super().__init__()
        self.limit = limit
        self.warmup = 10
        self.step = 0

    def forward(self, x):
        {forward_body}

    def describe(self):
        {describe}
"""


def test_counter_that_is_also_a_class_attribute_gets_no_fix():
    code = """
    from torch import nn

    class Block(nn.Module):
        step = 0

        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            self.step += 1
            return x * self.step
    """
    assert [d.fix for d in _lint(code, "JIT501")] == [None]


def test_counter_assigned_before_super_init_gets_no_fix():
    code = """
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            self.step = 0
            super().__init__()

        def forward(self, x):
            self.step += 1
            return x
    """
    assert [d.fix for d in _lint(code, "JIT501")] == [None]


@pytest.mark.parametrize(
    "init, update",
    [
        ("self.total = 0.0", "self.total += 0.5"),  # a float attribute: one recompile, then dynamic
        ("self.first = True", "self.first = False"),  # set once: one recompile
        ("self.stats = {}", 'self.stats["last"] = x.detach()'),  # same key each call: one recompile
        ('self.register_buffer("n", torch.zeros((), dtype=torch.long))', "self.n += 1"),
        ("self.hidden = None", "self.hidden = x.detach()"),
    ],
)
def test_state_that_does_not_recompile_every_call_is_not_flagged(init, update):
    code = f"""
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x):
        {update}
        return x
"""
    assert _lint(code, "JIT501") == []


@pytest.mark.parametrize(
    "init, update, flagged",
    [
        ("self.step = 0", "self.step += 1", True),
        ("self.tau = 1.0", "self.tau = max(0.5, self.tau * 0.9)", False),  # annealed temperature
        ("self.total = 0.0", "self.total += 0.5", False),
    ],
)
def test_int_state_recompiles_every_call_and_float_state_once(init, update, flagged):
    """Calibration on the installed torch: Dynamo guards on an int attribute's value, while a
    float attribute becomes a graph input after one recompile, so only ints are flagged."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.testing import CompileCounter

    from compile_lint.verifier.probe import load_module_from_source

    code = f"""
import torch
from torch import nn

class State(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x):
        {update}
        return x * 2
"""
    assert bool(_lint(code, "JIT501")) is flagged
    model = load_module_from_source(textwrap.dedent(code).lstrip("\n")).State()
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter)
    for _ in range(6):
        compiled(torch.randn(4, 8))
    assert counter.frame_count == (6 if flagged else 2)


def test_counter_outside_compiled_region_is_not_flagged():
    code = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            return x

        def on_step_end(self):
            self.step += 1
    """
    assert _lint(code, "JIT501") == []


def test_growing_list_in_helper_called_from_forward_is_flagged():
    code = """
    import torch
    from torch import nn

    class Recorder(nn.Module):
        def __init__(self):
            super().__init__()
            self.history = list()

        def _record(self, x):
            self.history.extend([x])

        def forward(self, x):
            self._record(x)
            return x
    """
    findings = _lint(code, "JIT501")
    assert [(d.code, d.line) for d in findings] == [("JIT501", 10)]
    assert "self.history.extend" in findings[0].message and findings[0].fix is None


def test_buffer_fix_spells_torch_as_the_file_does():
    code = """
    import torch as T
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 1

        def forward(self, x):
            self.step += 1
            return x * self.step
    """
    assert 'self.register_buffer("step", T.tensor(1), persistent=False)' in _fix(code, "JIT501", unsafe=True)


# ----- JIT502 specialized-scalar-argument -------------------------------------------


def test_positional_specialized_arguments_are_flagged():
    code = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, p: float = 0.1, scale=2.0, eps=1e-5):
            x = F.dropout(x, p, True)
            x = F.interpolate(x, None, scale)
            return F.layer_norm(x, x.shape[-1:], None, None, eps)
    """
    assert _codes_and_lines(code, "JIT502") == [("JIT502", 7), ("JIT502", 8), ("JIT502", 9)]


@pytest.mark.parametrize(
    "signature, body",
    [
        ("x, ref", "return x.to(ref)"),  # a tensor: converts to its dtype, no new guard
        ("x, ref", "return x.to(ref.dtype)"),
        ("x, half: bool = False", "return x.to(torch.float16) if half else x"),
        ("x", "return x.to(self.dtype)"),
        ("x, n: int = 2", "return x.repeat(n, 1)"),  # dynamic after one recompile
        ("x, steps: int = 3", "steps = min(steps, 4)\n        return sum(x for _ in range(steps))"),
    ],
)
def test_dynamic_or_tensor_arguments_are_not_flagged(signature, body):
    code = f"""
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.dtype = torch.float32

    def forward(self, {signature}):
        {body}
"""
    assert _lint(code, "JIT502") == []


def test_dtype_and_device_parameters_reaching_to_are_not_flagged():
    """One graph per dtype or device is bounded, like the inputs' own dtype guards, and
    such parameters follow the inputs in practice (DETR, SAM, diffusers embeddings)."""
    code = """
    import torch

    @torch.compile
    def move(x, device="cpu", dtype=torch.float32):
        return x.to(device=device).to(dtype)
    """
    assert _codes_and_lines(code, "JIT502") == []


def test_helper_parameters_are_not_inputs():
    code = """
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self, p=0.1):
            super().__init__()
            self.p = p

        def _drop(self, x, p):
            return F.dropout(x, p=p)

        def forward(self, x):
            return self._drop(x, self.p)
    """
    assert _lint(code, "JIT502") == []


# ----- JIT503 shape-dependent-loop ---------------------------------------------------


@pytest.mark.parametrize(
    "loop, flagged",
    [
        ("for t in range(T):", True),
        ("for b in range(B):", True),
        ("for c in range(C):", False),  # a trailing (feature) dim is fixed by the weights
        ("for i in range(x.shape[0] - 1):", True),
        ("for i in range(0, x.size(1), 2):", True),
        ("for i in range(x.size(-1)):", False),
        ("for i in range(x.dim()):", False),
        ("for i in range(x.ndim):", False),
        ("for part in x.split(2):", True),
        ("for part in x.split([2, 2]):", False),
        ("for part in x.split(2, dim=-1):", False),
        ("for part in x.unbind(-1):", False),
        ("for part in x.unbind(dim=1):", False),  # stacked layers / memories (x-transformers)
        ("for part in x.unbind():", True),
        ("for part in torch.unbind(x, 0):", True),
        ("for i, row in enumerate(x.float()):", True),
        ("for part in x.chunk(2):", False),
    ],
)
def test_loop_trip_counts(loop, flagged):
    code = f"""
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        B, T, C = x.shape
        {loop}
            x = x + 1
        return x
"""
    assert bool(_lint(code, "JIT503")) is flagged


def test_iterating_an_unannotated_input_is_not_flagged():
    # torchvision-style heads take a list of feature maps: iterating it is a fixed-length loop.
    code = """
    from torch import nn

    class Head(nn.Module):
        def forward(self, features, targets=None):
            return [f.sum() for f in features] + [len(features)] * len(features)
    """
    assert _lint(code, "JIT503") == []


def test_while_over_a_leading_dim_is_flagged_and_starred_unpacking_is_not():
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            *_, H, W = x.shape
            for i in range(H):
                x = x + i
            i = 0
            while i < x.size(0):
                i += 1
            return x
    """
    assert _codes_and_lines(code, "JIT503") == [("JIT503", 10)]


def test_self_referential_names_do_not_recurse_forever():
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x: torch.Tensor):
            n = x.size(-1)
            n = n + 1
            y = x
            y = y.flip(0)
            for i in range(n):
                y = y + i
            return [r for r in y]
    """
    assert _codes_and_lines(code, "JIT503") == [("JIT503", 12)]


# ----- JIT504 python-scalar-argument ----------------------------------------------

SAMPLER = """
import torch

@torch.compile(backend="eager")
def sample(logits, temperature: float):
    return (logits / temperature).softmax(-1)

def sweep(logits):
    outs = [sample(logits, t) for t in (0.5, 0.7, 1.0)]
    outs.append(sample(logits, temperature=2.0))
    return outs
"""


def test_python_scalar_argument_is_off_by_default():
    assert not PythonScalarArgument.default_enabled
    assert lint_text(textwrap.dedent(SAMPLER), "model.py", Config()) == []


def test_scalar_fix_wraps_call_sites_and_annotation_only_with_unsafe():
    assert _fix(SAMPLER, "JIT504") == textwrap.dedent(SAMPLER).lstrip("\n")
    fixed = _fix(SAMPLER, "JIT504", unsafe=True)
    assert "def sample(logits, temperature: torch.Tensor):" in fixed
    assert "sample(logits, torch.tensor(t))" in fixed
    assert "sample(logits, temperature=torch.tensor(2.0))" in fixed
    assert _lint(fixed, "JIT504") == []


def test_scalar_fix_keeps_outputs_and_removes_the_recompile():
    torch = pytest.importorskip("torch")
    from torch._dynamo.testing import CompileCounter

    from compile_lint.verifier.probe import load_module_from_source

    frames = {}
    outputs = {}
    sources = {"original": textwrap.dedent(SAMPLER).lstrip("\n"), "fixed": _fix(SAMPLER, "JIT504", unsafe=True)}
    for label, code in sources.items():
        module = load_module_from_source(code)
        torch._dynamo.reset()
        counter = CompileCounter()
        module.sample = torch.compile(module.sample._torchdynamo_orig_callable, backend=counter)
        torch.manual_seed(0)
        outputs[label] = module.sweep(torch.randn(4, 8))
        frames[label] = counter.frame_count
    torch.testing.assert_close(outputs["fixed"], outputs["original"])
    assert frames == {"original": 2, "fixed": 1}


@pytest.mark.parametrize(
    "body",
    [
        "return logits * temperature if temperature > 0 else logits",  # a branch on the value
        "return logits * temperature + math.log(temperature)",
    ],
)
def test_scalar_used_as_a_python_number_gets_no_fix(body):
    code = f"""
import math
import torch

@torch.compile
def sample(logits, temperature: float):
    {body}

def run(logits):
    return sample(logits, 0.5)
"""
    findings = _lint(code, "JIT504")
    assert [d.code for d in findings] == ["JIT504"]
    assert findings[0].fix is None


def test_scalar_methods_are_flagged_without_a_fix():
    code = """
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, alpha=0.5, flag=True, name="a", n: int = 2):
            return x * alpha + n
    """
    findings = _lint(code, "JIT504")
    assert [(d.line, d.fix) for d in findings] == [(4, None), (4, None)]


def test_scalar_reaching_a_specialized_argument_is_left_to_jit502():
    code = """
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, p=0.1):
            return F.dropout(x * p, p=p)
    """
    assert _lint(code, "JIT504") == []
    assert [d.code for d in _lint(code, "JIT502")] == ["JIT502"]


def test_a_dim_name_inside_an_unrelated_call_does_not_taint_other_sizes():
    # timm's Hiera: `x.view(B, ...)` mentions the batch size, but `len(x.shape)` is the rank.
    code = """
    import torch
    from torch import nn

    class Unroll(nn.Module):
        def forward(self, x: torch.Tensor, block_idx: int):
            B, N, C = x.shape
            for strides in self.schedule:
                x = x.view(B, *strides, -1, C)
                L = len(x.shape)
                permute = [p for p in zip(range(1, 3), range(3, L - 1))]
            return x.permute(permute)
    """
    assert _lint(code, "JIT503") == []


def test_dicts_and_tuples_from_submodules_are_not_tensors_to_iterate():
    # DETR: a criterion returns a dict of losses; a backbone a dict of feature maps.
    code = """
    import torch
    from torch import nn

    class Detr(nn.Module):
        def forward(self, images, targets):
            loss_dict = self.criterion(self.body(images), targets)
            features = self.backbone(images)
            out = {name: f for name, f in features.items()}
            values, indices = torch.ones(3, 4).max(-1)
            for pair in images.float().max(-1):
                out["pair"] = pair
            return sum(loss_dict[k] for k in loss_dict.keys()), out, values
    """
    assert _lint(code, "JIT503") == []


def test_scalar_uses_skip_nested_functions():
    code = """
    import torch

    @torch.compile
    def scale(x, alpha: float):
        def inner(alpha):
            return alpha
        y = [lambda v: v for _ in range(2)]
        return x * alpha

    def run(x):
        return scale(x, 0.5)
    """
    (finding,) = _lint(code, "JIT504")
    assert finding.fix is not None


def test_class_level_and_global_counters_are_flagged_without_a_fix():
    code = """
    import torch
    from torch import nn

    STEP = 0
    NAME = "model"

    class Block(nn.Module):
        calls = 0

        def forward(self, x):
            global STEP, NAME
            self.calls += 1
            STEP += 1
            NAME += "!"
            return x
    """
    findings = _lint(code, "JIT501")
    assert [(d.line, d.fix) for d in findings] == [(12, None), (13, None)]
    assert "global `STEP`" in findings[1].message


def test_forward_input_passed_through_helpers_to_a_specialized_argument_is_flagged():
    # diffusers-style: forward hands its scale to an upsampling helper.
    code = """
    import torch.nn.functional as F
    from torch import nn

    class Up(nn.Module):
        def _resize(self, x, factor):
            return F.interpolate(x, scale_factor=factor)

        def _block(self, x, s):
            return self._resize(x, factor=s)

        def forward(self, x, scale=2.0):
            return self._block(x, scale) + self._resize(x, 2.0)
    """
    assert _codes_and_lines(code, "JIT502") == [("JIT502", 6)]


def _example(rule, entry):
    return next(example for example in rule.invalid if example.entry == entry)


def test_documented_fix_levels_of_the_counter_examples():
    def fix_levels(entry):
        findings = _lint(_example(MutatedModuleState, entry).code, "JIT501")
        return [d.fix.applicability if d.fix else None for d in findings]

    assert fix_levels("WarmupScale") == ["unsafe"]
    assert fix_levels("LinearWarmup") == ["unsafe"]
    assert fix_levels("LoggedBlock") == ["unsafe"]
    assert fix_levels("EpsilonGreedy") == [None]
    assert fix_levels("KVCache") == [None]


def test_norm_eps_and_pad_value_inputs_are_flagged_but_pad_widths_are_not():
    code = """
    import torch
    import torch.nn.functional as F

    @torch.compile
    def norm(x, eps: float, fill: float, width: int):
        x = F.group_norm(x, 2, None, None, eps)
        x = F.rms_norm(x, (8,), eps=eps)
        x = F.pad(x, (width, width), "constant", fill)
        return F.pad(x, (width, width))
    """
    assert _codes_and_lines(code, "JIT502") == [("JIT502", 6), ("JIT502", 7), ("JIT502", 8)]


def test_outputs_of_builtin_layers_are_tensors_but_custom_and_recurrent_ones_are_not():
    code = """
    import torch
    from torch import nn

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(8, 8)
            self.rnn = nn.GRU(8, 8)
            self.head = DetectionHead()

        def forward(self, x):
            q = self.q_proj(x)
            scores = [row.sum() for row in q]
            states = [s for s in self.rnn(x)]
            boxes = [b for b in self.head(x)]
            return scores, states, boxes
    """
    assert _codes_and_lines(code, "JIT503") == [("JIT503", 13)]


@pytest.mark.parametrize("call,flagged", [("generate(x)", False), ("generate(x, steps=5)", True)])
def test_a_compiled_method_s_default_every_call_leaves_is_no_per_call_value(tmp_path, call, flagged):
    """JIT502 on `range(steps)` of a compiled `generate`: when every call the program makes of the compiled
    function leaves `steps` at its default, Dynamo compiles 3 in once and nothing recompiles
    (tests/fixtures/reach/new_user); a call passing another value is the per-call input the rule means."""
    write_tree(tmp_path, {"main.py": f"""
        import torch
        from torch import nn

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 4)

            def forward(self, x):
                return self.head(x)

            def generate(self, x, steps: int = 3):
                for _ in range(steps):
                    x = self(x)
                return x

        def main():
            generate = torch.compile(Decoder().generate)
            x = torch.randn(2, 4)
            return {call}
        """})
    result = run_cli("--no-cache", "--select", "JIT502", "--output-format", "concise", "main.py", cwd=tmp_path)
    assert ("JIT502" in result.stdout) is flagged, result.stdout
