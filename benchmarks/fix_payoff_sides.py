"""fix_payoff.py's sides of a comparison: a rule example (original or fixed) loaded, compiled and run.

Each side's Dynamo settings are its own: a setting fix's line runs when its copy is imported,
so what importing it changed is undone at once and patched back around that side's calls
alone (`case_side`, `with_settings`); the other side patches the same keys to its own values.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import torch
from torch import nn

from compile_lint.verifier.probe import load_module_from_source, resolve_entry


def compiled(model: Callable, mode: str) -> Callable:
    if mode == "eager":
        return model
    compiled = torch.compile(model, mode=None if mode == "default" else mode, dynamic=False)
    if mode != "reduce-overhead":
        return compiled

    def replayed(*args: Any, **kwargs: Any) -> Any:
        # Builds of several models take turns: each call starts a new CUDA-graph step.
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args, **kwargs)

    return replayed


def on_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(on_device(item, device) for item in value)
    if isinstance(value, dict):
        return {key: on_device(item, device) for key, item in value.items()}
    return value


def call_all(fn: Callable, calls: list) -> list:
    outputs = []
    for call in calls:
        args, kwargs = (call.get("args", ()), call.get("kwargs", {})) if isinstance(call, dict) else (call, {})
        outputs.append(snapshot(fn(*args, **kwargs)))
    return outputs


def snapshot(value: Any) -> Any:
    """A copy a later CUDA-graph replay cannot overwrite."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(item) for item in value)
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    return value


def fix_tags(original: str, fixed: str) -> list[str]:
    signs = {"torch.cond": "torch.cond(", "torch.where": "torch.where(", "is_compiling guard": "is_compiling()",
             "in-place counter": ".add_(", "register_fake": "register_fake", "compiler.disable": "compiler.disable",
             "Dynamo setting": "_dynamo.config.", "check": "torch._check", "runtime assert": "torch._assert"}
    return [tag for tag, text in signs.items() if text in fixed and text not in original] or ["other"]


def own_namespace(code: str) -> str:
    """The fixed copy's custom ops under a namespace of their own: both copies live in one process."""
    return re.sub(r"torch\.ops\.(\w+)\.", r"torch.ops.\1_fixed.", re.sub(r"([\"'])(\w+)::", r"\1\2_fixed::", code))


def case_side(code: str, entry: str, calls_text: str, mode: str,
               device: str) -> tuple[Callable[[], Any], dict[str, Any]]:
    """A pass over the example's calls with a fresh copy of `entry` built from `code`, compiled in `mode`,
    and the Dynamo settings importing `code` sets (a setting fix's line): undone here, so that
    they reach this side alone (`with_settings`)."""
    before = torch._dynamo.config.get_config_copy()
    try:
        model = resolve_entry(load_module_from_source(code), entry)
    finally:
        after = torch._dynamo.config.get_config_copy()
        torch._dynamo.config.load_config(before)
    changed = {key: value for key, value in after.items() if before.get(key) != value}
    if isinstance(model, nn.Module):
        model = model.to(device)
    torch.manual_seed(0)
    calls = on_device(eval(calls_text, {"torch": torch}), device)  # noqa: S307 - the rules' own examples
    fn = compiled(model, mode)
    return (lambda: call_all(fn, calls)), changed


def with_settings(runs: dict[str, Callable[[], Any]], changes: dict[str, dict[str, Any]]) -> None:
    """Each run under its own side's Dynamo settings, every run patching the same keys (to its own
    values or the defaults), so the patch's small cost is paid alike on both sides."""
    keys = sorted({key for changed in changes.values() for key in changed})
    if not keys:
        return
    defaults = torch._dynamo.config.get_config_copy()
    for name, run in list(runs.items()):
        values = {key: changes.get(name, {}).get(key, defaults[key]) for key in keys}

        def patched(run: Callable[[], Any] = run, values: dict[str, Any] = values) -> Any:
            with torch._dynamo.config.patch(values):
                return run()
        runs[name] = patched


def raising(error: Exception) -> Callable[[], Any]:
    """A run that fails as its build did, so that the failure is reported with the timings."""
    def run() -> Any:
        raise error

    return run
