"""What `torch.cond` does with arms that differ in shape, and with the other arms a rewrite meets (torch 2.13 CPU).

Written for issue 24 item 4: the JIT101/JIT103 fixes withheld `torch.where` where the arms
may differ in shape; `torch.cond` runs only the taken arm, so it can take them where it
accepts them. Each case is a module whose forward calls `torch.cond`; it is run eagerly
(torch.cond itself), compiled with backend="eager" and with the default Inductor backend,
each with fullgraph=True and with the default fullgraph=False, on inputs that take each
arm. A line says whether it compiles (frames counted), whether the outputs equal a plain
Python `if` on the same inputs, and, for the training cases, whether the gradients do.

Usage: python benchmarks/cond_arms_calibration.py   (one line per case and mode)
"""

from __future__ import annotations

import torch
import torch._dynamo.testing
from torch import nn

TAKE_TRUE = torch.arange(12.0).reshape(4, 3) / 10 + 0.05   # sum > 0: the true arm
TAKE_FALSE = -TAKE_TRUE                                      # sum < 0: the false arm


# ----- arms whose outputs differ in shape ---------------------------------------------------------

class ReduceOneArm(nn.Module):
    """(3,) on one side, (4, 3) on the other: the rank differs."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: x * 2, (x,))

    def reference(self, x):
        return x.sum(0) if x.sum() > 0 else x * 2


class ReduceKeepdim(nn.Module):
    """(1, 3) against (4, 3): same rank, one size differs."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))

    def reference(self, x):
        return x.sum(0, keepdim=True) if x.sum() > 0 else x * 2


class SliceOneArm(nn.Module):
    """(2, 3) against (4, 3), a slice cloned (cond rejects outputs that alias an operand)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x[:2].clone(), lambda x: x + 1, (x,))

    def reference(self, x):
        return x[:2] if x.sum() > 0 else x + 1


class SecondDimension(nn.Module):
    """(4, 2) against (4, 3): the sizes differ in dimension 1, not 0."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x[:, :2] * 2, lambda x: x * 2, (x,))

    def reference(self, x):
        return x[:, :2] * 2 if x.sum() > 0 else x * 2


class TwoDimensions(nn.Module):
    """(1, 2) against (4, 3)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True)[:, :2] * 1, lambda x: x * 2, (x,))

    def reference(self, x):
        return x.sum(0, keepdim=True)[:, :2] * 1 if x.sum() > 0 else x * 2


class UnsqueezeOneArm(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x * 2).unsqueeze(0), lambda x: x + 1, (x,))

    def reference(self, x):
        return (x * 2).unsqueeze(0) if x.sum() > 0 else x + 1


class TupleArmsDifferentShapes(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x.sum(0), x * 2), lambda x: (x * 3, x.mean(1)), (x,))

    def reference(self, x):
        return (x.sum(0), x * 2) if x.sum() > 0 else (x * 3, x.mean(1))


class UsedAfterElementwise(nn.Module):
    """The output, of a shape only the run knows, feeds more arithmetic and a reduction."""

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))
        return (y * 3 + 1).softmax(-1).sum()

    def reference(self, x):
        y = x.sum(0, keepdim=True) if x.sum() > 0 else x * 2
        return (y * 3 + 1).softmax(-1).sum()


class UsedAfterWithOtherTensor(nn.Module):
    """The output added to a tensor of the input's shape (broadcasts either way)."""

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))
        return y + x

    def reference(self, x):
        y = x.sum(0, keepdim=True) if x.sum() > 0 else x * 2
        return y + x


class UsedAfterShapeInPython(nn.Module):
    """The output's size read by Python (a reshape by it)."""

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))
        return y.reshape(y.shape[0] * 3)

    def reference(self, x):
        y = x.sum(0, keepdim=True) if x.sum() > 0 else x * 2
        return y.reshape(y.shape[0] * 3)


class UsedAfterPythonBranchOnShape(nn.Module):
    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))
        if y.shape[0] == 1:
            return y * 10
        return y

    def reference(self, x):
        y = x.sum(0, keepdim=True) if x.sum() > 0 else x * 2
        if y.shape[0] == 1:
            return y * 10
        return y


# ----- the predicate --------------------------------------------------------------------------------

class OneElementPredicate(nn.Module):
    """`torch.rand(1) < p` style: a (1,)-shaped bool, not 0-d."""

    def forward(self, x):
        return torch.cond(x.sum(0, keepdim=True)[:, 0] > 0, lambda x: x * 2, lambda x: x - 1, (x,))

    def reference(self, x):
        return x * 2 if x.sum(0, keepdim=True)[:, 0] > 0 else x - 1


class AnyPredicate(nn.Module):
    def forward(self, x):
        return torch.cond((x > 1.0).any(), lambda x: x.sum(0, keepdim=True), lambda x: x * 2, (x,))

    def reference(self, x):
        return x.sum(0, keepdim=True) if (x > 1.0).any() else x * 2


# ----- closures, mutation, Python values, dtypes -------------------------------------------------

class ClosureOverTensor(nn.Module):
    """The arms read `scale`, a tensor of the enclosing scope not passed as an operand."""

    def forward(self, x):
        scale = x.abs().mean(0)
        return torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True) * scale, lambda x: x * scale, (x,))

    def reference(self, x):
        scale = x.abs().mean(0)
        return x.sum(0, keepdim=True) * scale if x.sum() > 0 else x * scale


class ClosureOverPythonNumber(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = 0.5

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0, keepdim=True) * self.p, lambda x: x * self.p, (x,))

    def reference(self, x):
        return x.sum(0, keepdim=True) * self.p if x.sum() > 0 else x * self.p


class ClosureOverSubmodule(nn.Module):
    """The arms call submodules (their parameters are free variables of the arms)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.small = nn.Linear(3, 3)
        self.large = nn.Linear(3, 3)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.small(x), lambda x: self.large(x).mean(0, keepdim=True), (x,))

    def reference(self, x):
        return self.small(x) if x.sum() > 0 else self.large(x).mean(0, keepdim=True)


class NestedFunctionArms(nn.Module):
    """Several statements per arm, as nested functions defined right before the call."""

    def forward(self, x):
        def if_true(x):
            h = x * 2
            return h.sum(0, keepdim=True)

        def if_false(x):
            h = x + 1
            return h * h

        return torch.cond(x.sum() > 0, if_true, if_false, (x,))

    def reference(self, x):
        if x.sum() > 0:
            h = x * 2
            return h.sum(0, keepdim=True)
        h = x + 1
        return h * h


class MutatesInput(nn.Module):
    def forward(self, x):
        x = x.clone()

        def if_true(x):
            x.add_(1)
            return x.sum(0)

        return torch.cond(x.sum() > 0, if_true, lambda x: x * 2, (x,))

    def reference(self, x):
        x = x.clone()
        if x.sum() > 0:
            x.add_(1)
            return x.sum(0)
        return x * 2


class MutatesSelf(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        def if_true(x):
            self.calls += 1
            return x.sum(0)

        return torch.cond(x.sum() > 0, if_true, lambda x: x * 2, (x,))

    def reference(self, x):
        if x.sum() > 0:
            self.calls += 1
            return x.sum(0)
        return x * 2


class MutatesBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(3))

    def forward(self, x):
        def if_true(x):
            self.seen.add_(x.sum(0))
            return x.sum(0)

        return torch.cond(x.sum() > 0, if_true, lambda x: x.mean(0), (x,))

    def reference(self, x):
        if x.sum() > 0:
            self.seen.add_(x.sum(0))
            return x.sum(0)
        return x.mean(0)


class ReturnsNone(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: None, lambda x: None, (x,))

    def reference(self, x):
        return None


class ReturnsPythonNumber(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: 1.0, lambda x: 2.0, (x,))

    def reference(self, x):
        return 1.0 if x.sum() > 0 else 2.0


class ReturnsNumberAndTensor(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: 0.0, (x,))

    def reference(self, x):
        return x.sum(0) if x.sum() > 0 else 0.0


class DifferentDtypes(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: (x > 0).long(), (x,))

    def reference(self, x):
        return x * 2 if x.sum() > 0 else (x > 0).long()


class DifferentDtypesAndShapes(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: x.half(), (x,))

    def reference(self, x):
        return x.sum(0) if x.sum() > 0 else x.half()


class ReturnsOperand(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: x, (x,))

    def reference(self, x):
        return x.sum(0) if x.sum() > 0 else x


class ReturnsView(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sum(0), lambda x: x[:2], (x,))

    def reference(self, x):
        return x.sum(0) if x.sum() > 0 else x[:2]


class DifferentStrides(nn.Module):
    """Same shape, different strides: a transposed result made contiguous on one side only."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: (x * 2).t(), lambda x: x[:3].t() + 1, (x,))

    def reference(self, x):
        return (x * 2).t() if x.sum() > 0 else x[:3].t() + 1


class IntOperand(nn.Module):
    """A Python int passed as an operand."""

    def forward(self, x):
        n = 2
        return torch.cond(x.sum() > 0, lambda x, n: x[:n].clone(), lambda x, n: x * n, (x, n))

    def reference(self, x):
        n = 2
        return x[:n] if x.sum() > 0 else x * n


class RandomInArm(nn.Module):
    """Dropout in one arm (random draws)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: nn.functional.dropout(x, 0.5, True).sum(0, keepdim=True),
                          lambda x: x * 2, (x,))

    def reference(self, x):
        return nn.functional.dropout(x, 0.5, True).sum(0, keepdim=True) if x.sum() > 0 else x * 2


# ----- only the taken arm runs ---------------------------------------------------------------------

class UntakenArmWouldFail(nn.Module):
    """The untaken arm divides by a value the condition rules out: NaN/inf only if it ran."""

    def forward(self, x):
        d = x.sum()
        return torch.cond(d > 0, lambda x, d: (x / d).sum(0, keepdim=True), lambda x, d: x * 0, (x, d))

    def reference(self, x):
        d = x.sum()
        return (x / d).sum(0, keepdim=True) if d > 0 else x * 0


class NoGradInside(nn.Module):
    """The cond under `with torch.no_grad():` in forward; the arms call a submodule."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            return torch.cond(x.sum() > 0, lambda x: self.lin(x).sum(0, keepdim=True), lambda x: self.lin(x), (x,))

    def reference(self, x):
        with torch.no_grad():
            return self.lin(x).sum(0, keepdim=True) if x.sum() > 0 else self.lin(x)


class NoGradDecorated(NoGradInside):
    @torch.no_grad()
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.lin(x).sum(0, keepdim=True), lambda x: self.lin(x), (x,))


class IntOutputs(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.argmax(0, keepdim=True), lambda x: (x > 0.5).long(), (x,))

    def reference(self, x):
        return x.argmax(0, keepdim=True) if x.sum() > 0 else (x > 0.5).long()


CASES = [ReduceOneArm, ReduceKeepdim, SliceOneArm, SecondDimension, TwoDimensions, UnsqueezeOneArm,
         TupleArmsDifferentShapes, UsedAfterElementwise, UsedAfterWithOtherTensor, UsedAfterShapeInPython,
         UsedAfterPythonBranchOnShape,
         OneElementPredicate, AnyPredicate, ClosureOverTensor, ClosureOverPythonNumber, ClosureOverSubmodule,
         NestedFunctionArms, MutatesInput, MutatesSelf, MutatesBuffer, ReturnsNone, ReturnsPythonNumber,
         ReturnsNumberAndTensor, DifferentDtypes, DifferentDtypesAndShapes, ReturnsOperand, ReturnsView,
         DifferentStrides, IntOperand, RandomInArm, UntakenArmWouldFail, NoGradInside, NoGradDecorated, IntOutputs]
TRAINING_CASES = [ReduceOneArm, ReduceKeepdim, SliceOneArm, TupleArmsDifferentShapes, UsedAfterElementwise,
                  ClosureOverTensor, ClosureOverSubmodule, NestedFunctionArms, UntakenArmWouldFail]


def _first_line(error: BaseException) -> str:
    """The part of torch's message that names the cause (the error raised while tracing the cond)."""
    text = " ".join(str(error).split())
    for marker, stop in (("got RuntimeError(", ") Hint"), ("Got graph break/error: ", " Hint:"),
                         ("Explanation: ", " Hint:")):
        if marker in text:
            text = text[text.index(marker) + len(marker):]
            text = text[:text.index(stop)] if stop in text else text
            break
    return f"{type(error).__name__}: {text[:170]}"


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, equal_nan=True)
    return a == b


def _run(module: nn.Module, call, inputs) -> list:
    return [call(x.clone()) for x in inputs]


def measure(cls, mode: str, fullgraph: bool) -> str:
    """One case, one mode: "eager" calls torch.cond directly, else torch.compile(backend=mode)."""
    torch._dynamo.reset()
    module, reference = cls(), cls()
    if hasattr(module, "large"):
        reference.load_state_dict(module.state_dict())
    inputs = [TAKE_TRUE, TAKE_FALSE, TAKE_TRUE * 2]
    counter = torch._dynamo.testing.CompileCounter() if mode == "eager-backend" else None
    try:
        if mode == "eager":
            got = _run(module, module, inputs)
        else:
            backend = counter if counter is not None else "inductor"
            got = _run(module, torch.compile(module, backend=backend, fullgraph=fullgraph), inputs)
    except Exception as error:  # noqa: BLE001 - what torch says is the result
        return "fails: " + _first_line(error)
    expected = _run(reference, reference.reference, inputs)
    frames = f", {counter.frame_count} frame(s)" if counter is not None else ""
    same = all(_same(a, b) for a, b in zip(got, expected))
    state = ""
    if hasattr(module, "calls"):
        state = f", self.calls {module.calls} (a plain if: {reference.calls})"
    if hasattr(module, "seen"):
        state = f", buffer {module.seen.tolist()} (a plain if: {reference.seen.tolist()})"
    return f"runs{frames}, outputs {'equal' if same else 'DIFFER'}{state}"


def measure_training(cls, mode: str) -> str:
    """Backward through the cond: gradients of the input (and parameters) against a plain `if`."""
    torch._dynamo.reset()
    module, reference = cls(), cls()
    if hasattr(module, "large"):
        reference.load_state_dict(module.state_dict())
    call = module if mode == "eager" else torch.compile(
        module, backend="eager" if mode == "eager-backend" else "inductor", fullgraph=True)
    results = []
    try:
        for x in (TAKE_TRUE, TAKE_FALSE):
            for net, fn in ((module, call), (reference, reference.reference)):
                net.zero_grad()
                leaf = x.clone().requires_grad_()
                out = fn(leaf)
                loss = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
                loss.backward()
                grads = [leaf.grad] + [p.grad for p in net.parameters()]
                results.append(grads)
    except Exception as error:  # noqa: BLE001
        return "fails: " + _first_line(error)
    same = all(_same(a, b) for i in range(0, len(results), 2) for a, b in zip(results[i], results[i + 1]))
    finite = all(torch.isfinite(g).all() for grads in results for g in grads if g is not None)
    return f"backward runs, gradients {'equal' if same else 'DIFFER'}{'' if finite else ', NON-FINITE'}"


def measure_grad_mode(cls, backend: str, grad_mode: str) -> str:
    """Forward only, fullgraph=True, parameters requiring grad as in any model; `grad_mode` around the call."""
    import contextlib

    torch._dynamo.reset()
    module = cls().eval()
    around = {"grad on": contextlib.nullcontext, "no_grad": torch.no_grad,
              "inference_mode": torch.inference_mode}[grad_mode]
    try:
        compiled = torch.compile(module, backend=backend, fullgraph=True)
        with around():
            got = [compiled(x.clone()) for x in (TAKE_TRUE, TAKE_FALSE)]
            expected = [module.reference(x.clone()) for x in (TAKE_TRUE, TAKE_FALSE)]
    except Exception as error:  # noqa: BLE001
        return "fails: " + _first_line(error)
    return f"runs, outputs {'equal' if all(_same(a, b) for a, b in zip(got, expected)) else 'DIFFER'}"


def main() -> None:
    print(f"torch {torch.__version__}; inputs {tuple(TAKE_TRUE.shape)}, true arm, false arm, true arm")
    modes = [("eager", True), ("eager-backend", True), ("eager-backend", False), ("inductor", True),
             ("inductor", False)]
    for cls in CASES:
        for mode, fullgraph in modes:
            label = ("eager" if mode == "eager"
                     else f"{mode.replace('-backend', '')}/{'fullgraph' if fullgraph else 'default'}")
            print(f"{cls.__name__:30} {label:18} {measure(cls, mode, fullgraph)}", flush=True)
    for cls in TRAINING_CASES:
        for mode in ("eager", "eager-backend", "inductor"):
            label = f"train {mode}"
            print(f"{cls.__name__:30} {label:18} {measure_training(cls, mode)}", flush=True)
    for cls in (ClosureOverSubmodule, IntOutputs):
        for grad_mode in ("grad on", "no_grad", "inference_mode"):
            for backend in ("eager", "inductor"):
                label = f"eval {grad_mode} {backend}"
                print(f"{cls.__name__:30} {label:18} {measure_grad_mode(cls, backend, grad_mode)}", flush=True)


if __name__ == "__main__":
    main()
