"""The subprocess that runs one target: `python -m compile_lint.verifier.worker REQUEST RESULT`.

User code runs here, never in the parent, so a target that raises, hangs or runs out
of memory costs only this process. The request and the result are JSON files.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any


def _library_dirs() -> tuple[str, ...]:
    """Where code that is not the user's lives: compile-lint, the standard library, installed packages."""
    import sysconfig

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = sysconfig.get_paths()
    found = {package, *(paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib"))}
    return tuple(os.path.join(os.path.abspath(path), "") for path in found if path)


def user_frame(error: BaseException) -> tuple[str, int] | None:
    """(path, line) of the innermost traceback frame in the user's code, or None.

    A failing import or factory raises through compile-lint's loader and often inside a
    library; the line to look at is the last one of the user's own files (for a syntax error,
    the place it names)."""
    if isinstance(error, SyntaxError) and error.filename and error.lineno and os.path.isfile(error.filename):
        return os.path.abspath(error.filename), error.lineno
    libraries = _library_dirs()
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = os.path.abspath(frame.filename)
        if frame.lineno and os.path.isfile(path) and not path.startswith(libraries):
            found = (path, frame.lineno)
    return found


def _error(kind: str, error: BaseException) -> dict:
    lines = str(error).strip().splitlines()
    found: dict[str, Any] = {"kind": kind, "message": f"{type(error).__name__}: {lines[0] if lines else ''}",
                             "traceback": "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:]}
    frame = user_frame(error)
    if frame is not None:
        found["path"], found["line"] = frame
    return found


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
    from compile_lint.verifier.targets import entry_location, load_target, model_mode

    device = pick_device(request.get("device"))
    setting = request.get("model_mode", "factory")
    result: dict[str, Any] = {"target": request["target"], "device": device, "mode_setting": setting}
    loaded = load_target(request["target"], device, setting)
    result["mode"] = model_mode(loaded.model)
    result["module_file"] = loaded.module_file
    result["entry"] = entry_location(loaded.model)
    patch_mode = request.get("patch", "off")
    if patch_mode == "on":
        inductor_patch.apply()
    found, _ = analysis.analyze(loaded.fresh_model, loaded.calls, device, request.get("backend", "inductor"))
    result["analysis"] = found.to_json()
    if request.get("bench"):
        result["bench"] = bench.run_bench(loaded.fresh_model, loaded.calls, device, patch_mode,
                                          warmup=request.get("warmup", 10), iters=request.get("iters", 50),
                                          inner=request.get("inner", 10),
                                          control=request.get("control", False)).to_json()
    elif patch_mode == "compare":
        partial = bench.BenchResult(device=device)
        bench.compare_patch(loaded.fresh_model, loaded.calls, partial, _dtypes())
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


class _FixedSource:
    """A meta-path finder that imports the fixed copy wherever the original file is imported.

    The fixed side of `--fix --verify` runs in a process of its own, so the original code
    never runs there: a custom op the file registers is registered once, by the fixed code.
    """

    def __init__(self, original_path: str, fixed_path: str) -> None:
        self.original_path, self.fixed_path, self.hits = original_path, fixed_path, 0

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The fixed file's spec in place of the original's; None for every other module."""
        import importlib.machinery
        import importlib.util

        found = importlib.machinery.PathFinder.find_spec(name, path)
        if found is None or not found.origin or os.path.abspath(found.origin) != self.original_path:
            return None
        self.hits += 1
        return importlib.util.spec_from_file_location(
            name, self.fixed_path, submodule_search_locations=found.submodule_search_locations)


def fixcheck_request(request: dict) -> dict:
    """One side of `--fix --verify`: analyse the target on the original or on the fixed code.

    "before" imports the target as it is; "after" imports it with the fixed text in place
    of the original file (the target's own module, or a module it imports). Each side
    saves its example calls and eager outputs to `outputs_path` for the parent to compare.
    """
    import torch

    from compile_lint.verifier import analysis
    from compile_lint.verifier.targets import build, import_location, import_path, parse_target

    spec = parse_target(request["target"])
    device = pick_device(request.get("device"))
    original_path = os.path.abspath(request["original_path"])
    result: dict[str, Any] = {"target": request["target"], "device": device, "covered": True}
    if request["side"] == "before":
        module = import_location(spec)
        if os.path.abspath(module.__file__ or "") != original_path and _module_named_for(original_path) is None:
            return {**result, "covered": False}
    elif spec.is_path and os.path.abspath(spec.location) == original_path:
        module = import_path(original_path, "fixed", code_path=request["fixed_path"])
    else:
        finder = _FixedSource(original_path, request["fixed_path"])
        sys.meta_path.insert(0, finder)
        module = import_location(spec)
        if not finder.hits:
            return {**result, "covered": False}
    loaded = build(spec, module, device, request.get("model_mode", "factory"))
    found, eager = analysis.analyze(loaded.fresh_model, loaded.calls, device, request.get("backend", "eager"))
    torch.save({"calls": [(call.args, call.kwargs) for call in loaded.calls], "eager": eager},
               request["outputs_path"])
    return {**result, "analysis": found.to_json()}


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
