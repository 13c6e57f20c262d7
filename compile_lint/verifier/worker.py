"""The subprocess that runs one target: `python -m compile_lint.verifier.worker REQUEST RESULT`.

User code runs here, never in the parent, so a target that raises, hangs or runs out
of memory costs only this process. The request and the result are JSON files.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from typing import Any


def _error(kind: str, error: BaseException) -> dict:
    lines = str(error).strip().splitlines()
    return {"kind": kind, "message": f"{type(error).__name__}: {lines[0] if lines else ''}",
            "traceback": "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:]}


def _is_oom(error: BaseException) -> bool:
    return isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError"


def pick_device(requested: str | None) -> str:
    """CUDA when a GPU is present, else CPU, unless the user asked for one."""
    import torch

    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def verify_request(request: dict) -> dict:
    """Analyse one target (and benchmark it when asked)."""
    from compile_lint.verifier import analysis, bench, inductor_patch
    from compile_lint.verifier.targets import entry_location, load_target

    device = pick_device(request.get("device"))
    result: dict[str, Any] = {"target": request["target"], "device": device}
    loaded = load_target(request["target"], device)
    result["module_file"] = loaded.module_file
    result["entry"] = entry_location(loaded.model)
    patch_mode = request.get("patch", "off")
    if patch_mode == "on":
        inductor_patch.apply()
    found, _ = analysis.analyze(loaded.model, loaded.calls, device, request.get("backend", "inductor"))
    result["analysis"] = found.to_json()
    if request.get("bench"):
        result["bench"] = bench.run_bench(loaded.model, loaded.calls, device, patch_mode,
                                          warmup=request.get("warmup", 10), iters=request.get("iters", 50),
                                          inner=request.get("inner", 10),
                                          control=request.get("control", False)).to_json()
    elif patch_mode == "compare":
        partial = bench.BenchResult(device=device)
        bench.compare_patch(loaded.model, loaded.calls, partial, _dtypes())
        result["bench"] = partial.to_json()
    return result


def _dtypes() -> list:
    import torch

    return [torch.float32, torch.bfloat16]


def _module_named_for(path: str) -> str | None:
    """The sys.modules name under which the file at `path` is loaded, if any."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and os.path.abspath(file) == path:
            return name
    return None


def _load_as(name: str, path: str) -> Any:
    """Execute the file at `path` as module `name` (so relative imports still resolve)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixcheck_request(request: dict) -> dict:
    """Run the original and the fixed code side by side on the original's example calls.

    The fixed file is the target's own module, or a module the target imports: then the
    fixed text is loaded under that module's name and the target's module is imported
    afresh, so its factory builds the model from the fixed code.
    """
    from compile_lint.verifier import analysis
    from compile_lint.verifier.targets import Call, build, import_location, import_path, parse_target

    spec = parse_target(request["target"])
    device = pick_device(request.get("device"))
    backend = request.get("backend", "eager")
    original_path = os.path.abspath(request["original_path"])
    target_module = import_location(spec)
    target_file = os.path.abspath(target_module.__file__)
    original = build(spec, target_module, device)
    fixed_path = os.path.join(tempfile.mkdtemp(prefix="compile-lint-fixed-"), os.path.basename(original_path))
    with open(fixed_path, "w", encoding="utf-8") as handle:
        handle.write(request["fixed_text"])
    if target_file == original_path:
        fixed = build(spec, import_path(fixed_path, "fixed"), device)
    else:
        name = _module_named_for(original_path)
        if name is None:
            return {"target": request["target"], "covered": False}
        saved = sys.modules[name]
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name) if parent_name else None
        try:
            sys.modules[name] = _load_as(name, fixed_path)
            if parent is not None:
                setattr(parent, child, sys.modules[name])
            fixed = build(spec, import_path(target_file, "refixed"), device)
        finally:
            sys.modules[name] = saved
            if parent is not None:
                setattr(parent, child, saved)
    # Both factories ran under the same seed; still, feed both the original's inputs.
    calls = [Call(c.args, c.kwargs) for c in original.calls]
    before, eager_before = analysis.analyze(original.model, calls, device, backend)
    after, eager_after = analysis.analyze(fixed.model, calls, device, backend)
    outputs = analysis.compare(eager_before, eager_after) if eager_before and eager_after else None
    return {"target": request["target"], "device": device, "covered": True, "before": before.to_json(),
            "after": after.to_json(), "outputs": None if outputs is None else outputs.__dict__}


def main(argv: list[str]) -> int:
    """Read the request, run it, write the result; errors become part of the result."""
    request_path, result_path = argv
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    # User prints must not mix with anything the parent reads; the parent keeps stderr's tail.
    sys.stdout = sys.stderr
    try:
        if request.get("memory_limit_mb"):
            import resource

            limit = int(request["memory_limit_mb"]) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        if request.get("mode") == "fixcheck":
            result = fixcheck_request(request)
        else:
            result = verify_request(request)
    except BaseException as error:  # noqa: BLE001 - everything the user's code does is reported
        from compile_lint.verifier.targets import TargetError

        kind = "oom" if _is_oom(error) else "target" if isinstance(error, TargetError) else "error"
        result = {"target": request.get("target"), "error": _error(kind, error)}
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
