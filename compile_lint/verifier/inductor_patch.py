"""A memory-traffic cost model for Inductor's decision to realize a reused buffer.

Inductor inlines a Pointwise/Reduction value into every consumer unless
`StorageBox.should_realize_on_reuse(users)` says to store it. The stock rule counts
reads (`num_reads() > realize_reads_threshold`), not bytes. This patch decides by
bytes moved, from Inductor's own size hints:

    not realized: every one of `users` consumers recomputes it, reading R bytes each
    realized:     R read once, O written once, O read by each of `users` consumers

so it realizes when `R * (users - 1) >= O * (users + 1)`. When a size is unknown
(unbacked symbols) it falls back to the stock rule, and it keeps the stock rule's
register-pressure guard (`has_large_inner_fn`).

Caveats, measured: the upstream PyTorch version of this idea was reverted for accuracy
failures and vLLM's backport was reverted too. A realized intermediate is stored in the
buffer's dtype, so in bf16 it rounds where the inlined version kept float32. On an H200
with torch 2.11 it sped a residual/RMSNorm chain around an opaque custom op up by 6-8% at
small token counts and slowed it by 2% at large ones. Measure with
`compile-lint verify --bench --inductor-patch=compare` before you keep it.

Nothing here is applied at import time. `apply()` / `remove()` / `reuse_cost_model()`
are idempotent, affect compilations made after them (call `torch._dynamo.reset()` to
rebuild an already compiled model), and give patched builds their own FX graph cache
key, so a warm cache never hands back a stock build for a patched compile or the reverse.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterator, Optional

PATCH_ID = "compile-lint-reuse-cost-model-v1"
# Signatures of StorageBox.should_realize_on_reuse this patch knows (parameter names
# after self, keyword-only ones marked with *).
KNOWN_SIGNATURES = {
    ("users",): "torch<=2.11: should_realize_on_reuse(self, users)",
    ("users", "*graph_reuse"): "torch>=2.12: should_realize_on_reuse(self, users, *, graph_reuse=True)",
}


class PatchUnsupported(RuntimeError):
    """The installed torch's Inductor is not one this patch knows; nothing was changed."""


_state: dict[str, Any] = {"stock": None, "previous_pass": None, "key_pass": None}


def _signature_key(function: Callable) -> tuple[str, ...]:
    parameters = list(inspect.signature(function).parameters.values())[1:]
    return tuple(("*" if p.kind is inspect.Parameter.KEYWORD_ONLY else "") + p.name for p in parameters)


def _storage_box() -> Any:
    try:
        from torch._inductor import ir
    except Exception as error:  # noqa: BLE001 - any import failure means "not supported"
        raise PatchUnsupported(f"cannot import torch._inductor.ir: {error}") from None
    box = getattr(ir, "StorageBox", None)
    if box is None or not hasattr(box, "should_realize_on_reuse"):
        raise PatchUnsupported("torch._inductor.ir.StorageBox.should_realize_on_reuse not found")
    return box


def check_supported() -> str:
    """The known signature the installed torch has; raise PatchUnsupported otherwise."""
    box = _storage_box()
    method = _state["stock"] or box.should_realize_on_reuse
    key = _signature_key(method)
    if key not in KNOWN_SIGNATURES:
        import torch

        raise PatchUnsupported(
            f"torch {torch.__version__}: StorageBox.should_realize_on_reuse{inspect.signature(method)} "
            f"is not a signature this patch knows ({'; '.join(KNOWN_SIGNATURES.values())}); not applied"
        )
    return KNOWN_SIGNATURES[key]


def _size_hint(expr: Any) -> Optional[int]:
    """Inductor's integer hint for a size expression, or None when it has no backed hint."""
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    if any(str(symbol).startswith("u") for symbol in getattr(expr, "free_symbols", ())):
        return None  # unbacked (data-dependent) size: no honest byte count
    for name in ("optimization_hint", "size_hint"):
        method = getattr(sizevars, name, None)
        if method is not None:
            try:
                return int(method(expr, fallback=None))
            except Exception:  # noqa: BLE001 - some versions reject fallback=None
                try:
                    return int(method(expr))
                except Exception:  # noqa: BLE001
                    return None
    return None


def traffic_bytes(box: Any) -> Optional[tuple[int, int]]:
    """(bytes the inlined computation reads, bytes its output occupies), or None if unknown."""
    from torch._inductor.utils import get_dtype_size, sympy_product

    data = box.data
    try:
        reads = data.get_reads()
        total_read = 0
        for dep in reads:
            if hasattr(dep, "has_unbacked_symbols") and dep.has_unbacked_symbols():
                return None
            total_read += int(dep.numbytes_hint())
        numel = _size_hint(sympy_product(data.get_size()))
        if numel is None:
            return None
        output = numel * get_dtype_size(data.get_dtype())
    except Exception:  # noqa: BLE001 - any node we cannot size keeps the stock rule
        return None
    if output <= 0:
        return None
    return total_read, output


def realize_by_traffic(total_read: int, output: int, users: int) -> bool:
    """The cost model: storing once is cheaper than recomputing per consumer."""
    return total_read * (users - 1) >= output * (users + 1)


def _make_patched(stock: Callable) -> Callable:
    from torch._inductor.ir import Pointwise, Reduction

    keyword = "*graph_reuse" in _signature_key(stock)

    def should_realize_on_reuse(self: Any, users: int, **kwargs: Any) -> bool:
        if users > 1 and isinstance(self.data, (Pointwise, Reduction)) and kwargs.get("graph_reuse", True):
            sizes = traffic_bytes(self)
            if sizes is not None:
                return realize_by_traffic(sizes[0], sizes[1], users) or bool(self.has_large_inner_fn())
        return stock(self, users, **kwargs)

    if not keyword:
        def should_realize_on_reuse_no_keyword(self: Any, users: int) -> bool:
            return should_realize_on_reuse(self, users)

        patched = should_realize_on_reuse_no_keyword
    else:
        def should_realize_on_reuse_keyword(self: Any, users: int, *, graph_reuse: bool = True) -> bool:
            return should_realize_on_reuse(self, users, graph_reuse=graph_reuse)

        patched = should_realize_on_reuse_keyword
    patched.__name__ = "should_realize_on_reuse"
    patched.__doc__ = "compile-lint memory-traffic cost model (see compile_lint.verifier.inductor_patch)."
    patched._compile_lint_patch = PATCH_ID  # type: ignore[attr-defined]
    return patched


def _cache_key_pass(previous: Any) -> Any:
    """A post-grad pass that changes nothing but the FX graph cache key.

    It runs the user's own post-grad pass, if any, and reports a uuid that combines ours
    with theirs, so patched builds are cached apart from stock ones.
    """
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class ReuseCostModelKey(CustomGraphPass):
        def __call__(self, graph: Any) -> None:
            if previous is not None:
                previous(graph)

        def uuid(self) -> Optional[Any]:
            if previous is None:
                return PATCH_ID
            inner = previous.uuid() if hasattr(previous, "uuid") else None
            # A plain callable has no uuid: keep the cache bypassed, as stock Inductor does.
            return None if inner is None else (PATCH_ID, inner)

    return ReuseCostModelKey()


def compile_options(mode: Optional[str] = None) -> dict:
    """`torch.compile(options=...)` for a patched build: the mode's options plus the cache-key
    pass. A second `torch.compile` of the same model with the same settings reuses the first
    one's Dynamo cache entry; these options make the patched build a distinct backend, so
    stock and patched builds of one model can live side by side. Call after apply()."""
    import torch._inductor

    if not is_applied():
        raise RuntimeError("compile_options() needs the patch applied")
    options = dict(torch._inductor.list_mode_options(mode) if mode else {})
    options["post_grad_custom_post_pass"] = _state["key_pass"]
    return options


def control_options(mode: Optional[str] = None) -> dict:
    """Options for a stock build that differs from stock only in carrying a no-op post-grad
    pass, like a patched build does: the benchmark's control, so that any speed difference
    the extra pass or a distinct build could cause is not credited to the cost model."""
    import torch._inductor

    options = dict(torch._inductor.list_mode_options(mode) if mode else {})
    options["post_grad_custom_post_pass"] = _control_pass()
    return options


def _control_pass() -> Any:
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class ControlKey(CustomGraphPass):
        def __call__(self, graph: Any) -> None:
            return None

        def uuid(self) -> Optional[Any]:
            return PATCH_ID + "-control"

    return ControlKey()


def is_applied() -> bool:
    """Whether the cost model is currently installed."""
    try:
        box = _storage_box()
    except PatchUnsupported:
        return False
    return getattr(box.should_realize_on_reuse, "_compile_lint_patch", None) == PATCH_ID


def apply() -> None:
    """Install the cost model (idempotent). Raises PatchUnsupported on an unknown Inductor."""
    if is_applied():
        return
    check_supported()
    from torch._inductor import config

    box = _storage_box()
    stock = box.should_realize_on_reuse
    key_pass = _cache_key_pass(config.post_grad_custom_post_pass)
    _state.update(stock=stock, previous_pass=config.post_grad_custom_post_pass, key_pass=key_pass)
    box.should_realize_on_reuse = _make_patched(stock)
    config.post_grad_custom_post_pass = key_pass


def remove() -> None:
    """Restore the stock method and the post-grad pass that was set before (idempotent)."""
    if not is_applied():
        return
    from torch._inductor import config

    box = _storage_box()
    box.should_realize_on_reuse = _state["stock"]
    if config.post_grad_custom_post_pass is _state["key_pass"]:
        config.post_grad_custom_post_pass = _state["previous_pass"]
    _state.update(stock=None, previous_pass=None, key_pass=None)


@contextlib.contextmanager
def reuse_cost_model(enabled: bool = True) -> Iterator[None]:
    """Within the block, compile with (enabled=True) or without the cost model; restore after."""
    was_applied = is_applied()
    if enabled:
        apply()
    else:
        remove()
    try:
        yield
    finally:
        if was_applied:
            apply()
        else:
            remove()
