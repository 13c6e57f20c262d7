"""What Dynamo does with the four patterns issue 39 names, and with their look-alikes (torch 2.13 CPU).

`torch.autograd.grad` (JIT619), calling a TypedDict with optional keys (JIT308), a torch
function called with `requires_grad=True` (JIT609), and Python arithmetic on a
`random.randint/uniform/randrange` draw (JIT410). Each case is a module whose `forward`
runs the snippet, and a function `fn` that calls an instance of it (in training mode: the
snippet reached from a compiled function); each is run eagerly, then
compiled with backend="eager" and `fullgraph=True`, then with the default settings while
counting frames and reading Dynamo's graph-break counters (a frame Dynamo gives up on
whole, as after "unimplemented builtin op", shows as 0 frames and its reason). Modules run
in eval and train mode, with grad enabled and under `torch.no_grad()`, where the case says
it matters. A line: case, entry, mode, grad, then the fullgraph verdict and the default
one, each failure as its graph-break type and GB id from torch's graph_break_registry.json.

Usage: python benchmarks/issue39_calibration.py   (one line per case, entry and mode)
"""

from __future__ import annotations

import contextlib
import json
import os
import textwrap

import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

from compile_lint.verifier.probe import load_module_from_source

_REGISTRY = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
with open(_REGISTRY, encoding="utf-8") as _handle:
    GB_IDS = {entry["Gb_type"]: gb for gb, entries in json.load(_handle).items() for entry in entries}

HEAD = "import math, random\nimport torch\nfrom torch import nn\n"


def _gb(error: BaseException) -> str:
    gb_type = getattr(error, "gb_type", None)
    if gb_type:
        return f"{gb_type} [{GB_IDS.get(gb_type, '?')}]"
    return f"{type(error).__name__}: {str(error).splitlines()[0][:100]}"


def _verdicts(fn, make_args, grad: bool) -> tuple[str, str, str]:
    """(eager, fullgraph, default) for two calls of `fn`."""
    mode = contextlib.nullcontext if grad else torch.no_grad
    try:
        with mode():
            fn(*make_args())
        eager = "runs"
    except Exception as error:  # noqa: BLE001 - what eager code raises is the result
        eager = f"fails: {type(error).__name__}"
    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, backend="eager", fullgraph=True)
        with mode():
            for _ in range(2):
                compiled(*make_args())
        fullgraph = "compiles"
    except Exception as error:  # noqa: BLE001 - what the compiler says is the result
        fullgraph = "fails: " + _gb(error)
    torch._dynamo.reset()
    counters.clear()
    counter = CompileCounter()
    try:
        compiled = torch.compile(fn, backend=counter)
        with mode():
            for _ in range(2):
                compiled(*make_args())
        breaks = sorted({reason.splitlines()[0] for reason in counters["graph_break"]})
        if counter.frame_count == 0 and not breaks:
            breaks = sorted({"whole frame skipped: " + reason.splitlines()[0] for reason in counters["unimplemented"]})
        shown = ", ".join(f"{b} [{GB_IDS.get(b.split(': ', 1)[-1], '?')}]" for b in breaks) or "no break"
        default = f"{counter.frame_count} frame(s), {shown}"
    except Exception as error:  # noqa: BLE001
        default = "error: " + _gb(error)
    torch._dynamo.reset()
    return eager, fullgraph, default


def case(label: str, body: str, *, setup: str = "", args: str = "lambda: (torch.randn(4, 8),)",
         modes: tuple[str, ...] = ("eval",), grads: tuple[bool, ...] = (True,)) -> None:
    """Run `body` (the statements of a forward taking `x`) in `Model.forward` and in `fn`, and print the verdicts."""
    indented = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    code = (HEAD + textwrap.dedent(setup) + "\n\nclass Model(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.lin = nn.Linear(8, 8)\n        self.scale = 0.5\n\n"
            "    def forward(self, x):\n" + indented + "\n\n\n_fn_model = Model()\n\n\ndef fn(x):\n"
            "    return _fn_model(x)\n")
    module = load_module_from_source(code, "issue39")
    make_args = eval(args, {"torch": torch})  # noqa: S307 - our own cases
    for entry in ("forward", "fn"):
        for mode in modes if entry == "forward" else ("-",):
            for grad in grads:
                if entry == "forward":
                    torch.manual_seed(0)
                    target = module.Model().train(mode == "train")
                else:
                    target = module.fn
                eager, fullgraph, default = _verdicts(target, make_args, grad)
                print(f"{label:44} {entry:7} {mode:5} {'grad' if grad else 'no_grad':7} eager {eager:6} | "
                      f"fullgraph: {fullgraph} | default: {default}")


def autograd_cases() -> None:
    both = {"modes": ("eval", "train"), "grads": (True, False)}
    grad_body = """
    with torch.enable_grad():
        y = (self.lin(x) ** 2).sum()
        (g,) = torch.autograd.grad(y, self.lin.weight{extra})
    return x + g.sum()
    """
    case("autograd.grad, enable_grad", grad_body.format(extra=""), **both)
    case("autograd.grad, enable_grad, create_graph", grad_body.format(extra=", create_graph=True"), **both)
    case("autograd.grad, no enable_grad (grad mode on)", """
    y = (self.lin(x) ** 2).sum()
    (g,) = torch.autograd.grad(y, self.lin.weight)
    return x + g.sum()
    """, modes=("eval", "train"))
    case("from torch.autograd import grad", """
    from torch.autograd import grad
    with torch.enable_grad():
        g = grad((self.lin(x) ** 2).sum(), [self.lin.weight])[0]
    return x + g.sum()
    """)
    case("torch.func.grad", """
    def score(w):
        return (x @ w).pow(2).sum()
    return torch.func.grad(score)(self.lin.weight)
    """, grads=(True, False))
    case("loss.backward() (not a JIT619 case)", """
    with torch.enable_grad():
        (self.lin(x) ** 2).sum().backward()
    return x * 2
    """)
    torch._dynamo.config.trace_autograd_ops = True
    try:
        case("trace_autograd_ops=True: autograd.grad, enable_grad", grad_body.format(extra=""), **both)
        case("trace_autograd_ops=True: external grad_fn", """
        y = self.lin(x).pow(2).sum()
        (g,) = torch.autograd.grad(y, self.lin.weight)
        return g
        """, args="lambda: (torch.randn(4, 8, requires_grad=True) * 2,)")
        case("trace_autograd_ops=True: returns consumed graph", """
        with torch.enable_grad():
            y = self.lin(x)
            (g,) = torch.autograd.grad(y.sum(), self.lin.weight)
        return y, g
        """)
    finally:
        torch._dynamo.config.trace_autograd_ops = False


TYPED_DICTS = """
from typing import Optional, TypedDict
from typing_extensions import NotRequired, Unpack

class Partial(TypedDict, total=False):
    logits: torch.Tensor
    aux: torch.Tensor

class Total(TypedDict):
    logits: torch.Tensor
    aux: Optional[torch.Tensor]

class WithNotRequired(TypedDict):
    logits: torch.Tensor
    aux: NotRequired[torch.Tensor]

class Inherits(Partial):
    extra: int

class EmptyPartial(TypedDict, total=False):
    pass

Functional = TypedDict("Functional", {"logits": torch.Tensor}, total=False)

def scaled(x, **kwargs: Unpack[Partial]):
    return x * 2
"""


def typed_dict_cases() -> None:
    for label, build in (
        ("TypedDict total=False, keywords", "Partial(logits=x)"),
        ("TypedDict total=False, a mapping", "Partial({'logits': x})"),
        ("TypedDict total=True", "Total(logits=x, aux=None)"),
        ("TypedDict with a NotRequired field", "WithNotRequired(logits=x)"),
        ("TypedDict subclass of a total=False one", "Inherits(logits=x, extra=1)"),
        ("TypedDict total=False with no fields", "dict(EmptyPartial(), logits=x)"),
        ("functional TypedDict total=False", "Functional(logits=x)"),
        ("dict literal annotated with the TypedDict", "{'logits': x}"),
        ("dict(...) call", "dict(logits=x)"),
    ):
        case(label, f"out = {build}\nreturn out['logits'] * 2", setup=TYPED_DICTS)
    case("Unpack[TypedDict] as **kwargs type", "return scaled(x, logits=x)", setup=TYPED_DICTS)


def requires_grad_cases() -> None:
    both = {"modes": ("eval", "train"), "grads": (True, False)}
    case("torch.zeros(requires_grad=True)", "w = torch.zeros(8, requires_grad=True)\nreturn x * w", **both)
    for label, build in (
        ("torch.tensor(requires_grad=True)", "torch.tensor(2.0, requires_grad=True)"),
        ("torch.randn_like(requires_grad=True)", "torch.randn_like(x, requires_grad=True)"),
        ("torch.full(requires_grad=True)", "torch.full((8,), 0.5, requires_grad=True)"),
        ("x.new_tensor(requires_grad=True)", "x.new_tensor([1.0] * 8, requires_grad=True)"),
        ("x.new_zeros(requires_grad=True)", "x.new_zeros(8, requires_grad=True)"),
        ("torch.zeros(requires_grad=False)", "torch.zeros(8, requires_grad=False)"),
        ("torch.zeros(requires_grad=x.requires_grad)", "torch.zeros(8, requires_grad=x.requires_grad)"),
    ):
        case(label, f"w = {build}\nreturn x * w", grads=(True, False))
    case("requires_grad=True under torch.no_grad()", """
    with torch.no_grad():
        w = torch.zeros(8, requires_grad=True)
    return x * w
    """)
    case("requires_grad=self.training", "w = torch.zeros(8, requires_grad=self.training)\nreturn x * w",
         modes=("eval", "train"))
    case("nn.Parameter(torch.zeros(requires_grad=True))", "w = nn.Parameter(torch.zeros(8, requires_grad=True))\n"
         "return x * w")


def random_draw_cases() -> None:
    case("randint + 1", "k = random.randint(0, 3) + 1\nreturn x * k", modes=("eval", "train"), grads=(True, False))
    for label, body in (
        ("randint alone times a tensor", "return x * random.randint(0, 3)"),
        ("tensor minus randint", "return x - random.randint(0, 3)"),
        ("randint * 2, // 2, % 2, ** 2", "k = random.randint(0, 3) * 2 // 2 % 2 ** 2\nreturn x * k"),
        ("4 - randint", "k = 4 - random.randint(0, 3)\nreturn x * k"),
        ("x.shape[0] - randint", "k = x.shape[0] - random.randint(0, 3)\nreturn x * k"),
        ("-randint", "return x * -random.randint(0, 3)"),
        ("randint << 1", "return x * (random.randint(0, 3) << 1)"),
        ("k = randint; k += 1", "k = random.randint(0, 3)\nk += 1\nreturn x * k"),
        ("randrange + 1", "return x * (random.randrange(0, 3) + 1)"),
        ("uniform * self.scale", "return x * (random.uniform(0, 1) * self.scale)"),
        ("uniform - 0.5 inside a tensor expression", "return x + (random.uniform(0, 1) - 0.5)"),
        ("x * uniform * 2 (tensor first)", "return x * random.uniform(0, 1) * 2"),
        ("2 * uniform * x (number first)", "return 2 * random.uniform(0, 1) * x"),
        ("uniform + tensor.sum()", "return x * (random.uniform(0, 1) + x.sum())"),
        ("randint + randint", "return x * (random.randint(0, 3) + random.randint(0, 3))"),
        ("uniform < 0.5 (a comparison)", "keep = random.uniform(0, 1) < 0.5\nreturn x * keep"),
        ("not randint", "return x * (not random.randint(0, 1))"),
        ("randint as a slice bound", "return x[:random.randint(1, 3)]"),
        ("randint + 1 as a slice bound", "return x[:random.randint(0, 2) + 1]"),
        ("int(randint)", "return x * int(random.randint(1, 3))"),
        ("torch.randint(0, 4, ()) + 1", "return x * (torch.randint(0, 4, ()) + 1)"),
        ("torch.empty(()).uniform_(a, b) * 2", "return x * (torch.empty(()).uniform_(0.9, 1.1) * 2)"),
        ("random.random() + 1 (JIT402)", "return x * (random.random() + 1)"),
    ):
        case(label, body, grads=(False,))


def main() -> None:
    print(f"torch {torch.__version__}, backend=eager; eager / fullgraph=True / default compile")
    for section in (autograd_cases, typed_dict_cases, requires_grad_cases, random_draw_cases):
        print(f"# {section.__name__}")
        section()


if __name__ == "__main__":
    main()
