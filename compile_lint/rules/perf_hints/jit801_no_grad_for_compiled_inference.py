"""JIT801 no-grad-for-compiled-inference: Compiled inference under `torch.no_grad()`
where `torch.inference_mode()` fits."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Valid
from compile_lint.rules.support.compile_sites import ENCODER, CompiledSiteRule, target_names


class NoGradForCompiledInference(CompiledSiteRule):
    """Compiled inference under `torch.no_grad()` where `torch.inference_mode()` fits.

    Why: `inference_mode` also skips view tracking and version-counter updates that
    `no_grad` still pays for on every call. The gain is small per call: measured on an
    H200 (torch 2.11, a small MLP, ten interleaved rounds of 2000 calls) the median
    per-call time was 121 vs 131 us in the default mode and 118 vs 134 us with
    reduce-overhead, with run-to-run spread larger than that. Mixing the two modes on
    one compiled model costs a recompile (measured on torch 2.13: grad mode is guarded),
    so the hint fires only when every call of the model in the file is under `no_grad`.

    Instead: `with torch.inference_mode():`. The fix is unsafe: tensors made in
    inference mode cannot later be updated in place or used in autograd outside it,
    so blocks that store results in attributes, containers or subscripts, or touch
    autograd, are not reported.
    """

    code = "JIT801"
    name = "no-grad-for-compiled-inference"
    fix_applicability = "unsafe"
    message = (
        "compiled inference under torch.no_grad(): torch.inference_mode() skips more autograd bookkeeping; "
        "use it when the outputs are never used with autograd"
    )
    invalid = [
        Invalid(
            ENCODER
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.no_grad():
        return [model(batch).cpu() for batch in batches]
''',
            fixed=ENCODER.lstrip("\n")
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.inference_mode():
        return [model(batch).cpu() for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            lines=[16],
        ),
        Invalid(
            ENCODER
            + '''

class Predictor:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())

    def __call__(self, x):
        with torch.no_grad():
            logits = self.model(x)
        return logits.softmax(-1)
''',
            fixed=ENCODER.lstrip("\n")
            + '''

class Predictor:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())

    def __call__(self, x):
        with torch.inference_mode():
            logits = self.model(x)
        return logits.softmax(-1)
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            lines=[19],
        ),
    ]
    valid = [
        Valid(
            ENCODER
            + '''

def embed(batches):
    model = torch.compile(Encoder().eval())
    with torch.inference_mode():
        return [model(batch).cpu() for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
        Valid(
            ENCODER
            + '''

class CachedEncoder:
    def __init__(self):
        self.model = torch.compile(Encoder().eval())
        self.cache = None

    def __call__(self, x):
        with torch.no_grad():
            self.cache = self.model(x)
        self.cache.mul_(0.5)
        return self.cache
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            note="the result outlives the block and is updated in place: inference mode would raise",
        ),
        Valid(
            ENCODER
            + '''

def train_and_eval(x, target):
    model = torch.compile(Encoder())
    loss = (model(x) - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        return model(x)
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
            note="the model also runs with grad: switching one call site would add a recompile",
        ),
        Valid(
            ENCODER
            + '''

def eager_embed(batches):
    model = Encoder().eval()
    with torch.no_grad():
        return [model(batch) for batch in batches]
''',
            calls="[(torch.randn(2, 16, 8),)]",
            entry="Encoder",
        ),
    ]

    def visit_With(self, node: cst.With) -> None:
        compiled = set(self.compiled())
        item = self._no_grad_item(node)
        if item is None or not compiled or not _calls_compiled(node.body, compiled):
            return
        if _keeps_or_differentiates(node.body, self.context.imports) or self._updated_later(node):
            return
        if not self._all_calls_under_no_grad(compiled & self._called_names(node.body)):
            return
        call = item.item
        assert isinstance(call, cst.Call)
        spelled, imports = spell(self.context, "torch.inference_mode")
        fix = FixPlan([(call.func, cst.parse_expression(spelled))], "Use torch.inference_mode()", "unsafe", imports)
        self.report(call, fix=fix)

    def _updated_later(self, node: cst.With) -> bool:
        """True when a name the block assigns is updated in place or used for autograd in its scope.

        An inference tensor updated in place outside inference mode raises, so such a
        block must stay under no_grad.
        """
        assigned: set[str] = set()

        class _Targets(cst.CSTVisitor):
            def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
                assigned.update(target_names(target.target))

        visit(node.body, _Targets())
        if not assigned:
            return False
        scope: cst.CSTNode = self.context.function or self.context.module
        updated = False

        class _Updates(cst.CSTVisitor):
            def visit_AugAssign(self, statement: cst.AugAssign) -> None:
                nonlocal updated
                if dotted_name(statement.target) in assigned:
                    updated = True

            def visit_Call(self, call: cst.Call) -> None:
                nonlocal updated
                func = call.func
                if isinstance(func, cst.Attribute) and dotted_name(func.value) in assigned:
                    method = func.attr.value
                    if (method.endswith("_") and not method.endswith("__")) or method in _GRAD_USES:
                        updated = True

        visit(scope, _Updates())
        return updated

    def _no_grad_item(self, node: cst.With) -> Optional[cst.WithItem]:
        for item in node.items:
            if isinstance(item.item, cst.Call) and self.context.qualname(item.item.func) == "torch.no_grad":
                return item
        return None

    @staticmethod
    def _called_names(node: cst.CSTNode) -> set[str]:
        names: set[str] = set()

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                name = dotted_name(call.func)
                if name:
                    names.add(name)

        visit(node, _Calls())
        return names

    def _all_calls_under_no_grad(self, names: set[str]) -> bool:
        """Every call of these compiled names in the file sits in a `with torch.no_grad():` block."""
        context = self.context
        return all(self._under_no_grad(call) for name in names for call in context.calls_named(name))

    def _under_no_grad(self, call: cst.Call) -> bool:
        node: Optional[cst.CSTNode] = call
        while node is not None:
            node = self.context.parent(node)
            if isinstance(node, cst.With) and any(
                isinstance(i.item, cst.Call) and self.context.qualname(i.item.func) == "torch.no_grad"
                for i in node.items
            ):
                return True
        return False


_GRAD_USES = frozenset({"backward", "requires_grad_", "retain_grad", "register_hook"})


def _calls_compiled(node: cst.CSTNode, compiled: set[str]) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            if dotted_name(call.func) in compiled:
                found = True

    visit(node, _Find())
    return found


def _keeps_or_differentiates(node: cst.CSTNode, imports: ImportMap) -> bool:
    """True when a block stores results beyond itself or touches autograd.

    Inference tensors cannot be updated in place or saved for backward outside
    inference mode, so blocks that stash results in attributes, containers or
    subscripts, or call autograd APIs, are not safe to switch.
    """
    risky = False

    class _Check(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            nonlocal risky
            if isinstance(target.target, (cst.Attribute, cst.Subscript)):
                risky = True

        def visit_AugAssign(self, statement: cst.AugAssign) -> None:
            nonlocal risky
            risky = True

        def visit_Call(self, call: cst.Call) -> None:
            nonlocal risky
            func = call.func
            if isinstance(func, cst.Attribute) and (func.attr.value in _GRAD_USES
                                                    or func.attr.value in ("append", "extend")):
                risky = True
            qualified = imports.qualname(func) or ""
            if qualified.startswith(("torch.autograd.", "torch.enable_grad", "torch.set_grad_enabled")):
                risky = True

    visit(node, _Check())
    return risky

