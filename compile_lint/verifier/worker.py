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
    formatted = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    found: dict[str, Any] = {"kind": kind, "message": f"{type(error).__name__}: {lines[0] if lines else ''}",
                             "traceback": formatted[-4000:]}
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


class _FixedSources:
    """A meta-path finder that imports the fixed copy wherever an original file is imported.

    The fixed side of `--fix --verify` runs in a process of its own, so the original code
    never runs there: a custom op a file registers is registered once, by the fixed code.
    `fixed` maps each original file to its fixed copy; `hits` collects the originals replaced.
    """

    def __init__(self, fixed: dict[str, str]) -> None:
        self.fixed = fixed
        self.hits: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """The fixed file's spec in place of the original's; None for every other module."""
        import importlib.machinery
        import importlib.util

        found = importlib.machinery.PathFinder.find_spec(name, path)
        if found is None or not found.origin:
            return None
        original = os.path.abspath(found.origin)
        if original not in self.fixed:
            return None
        self.hits.add(original)
        return importlib.util.spec_from_file_location(
            name, self.fixed[original], submodule_search_locations=found.submodule_search_locations)


def fixcheck_request(request: dict) -> dict:
    """One side of `--fix --verify`: analyse the target on the original or on the fixed code.

    `request["fixed"]` maps original files to fixed copies. "before" imports the target as it
    is; "after" imports it with every fixed copy in place of its original (the target's own
    module, or modules it imports). Both report `covered`: the originals the target imports
    (none: nothing runs). Each side saves its example calls and eager outputs to
    `outputs_path` for the parent to compare.
    """
    import torch

    from compile_lint.verifier import analysis
    from compile_lint.verifier.targets import build, import_location, import_path, parse_target

    spec = parse_target(request["target"])
    device = pick_device(request.get("device"))
    fixed = {os.path.abspath(original): copy for original, copy in request["fixed"].items()}
    result: dict[str, Any] = {"target": request["target"], "device": device}
    own_file = os.path.abspath(spec.location) if spec.is_path else None
    if request["side"] == "before":
        module = import_location(spec)
        covered = {path for path in fixed
                   if os.path.abspath(module.__file__ or "") == path or _module_named_for(path) is not None}
    else:
        finder = _FixedSources(fixed)
        sys.meta_path.insert(0, finder)
        if own_file is not None and own_file in fixed:
            module = import_path(own_file, "fixed", code_path=fixed[own_file])
            finder.hits.add(own_file)
        else:
            module = import_location(spec)
        covered = finder.hits
    result["covered"] = sorted(covered)
    if not covered:
        return result
    try:
        loaded = build(spec, module, device, request.get("model_mode", "factory"))
        found, eager = analysis.analyze(loaded.fresh_model, loaded.calls, device, request.get("backend", "eager"))
        torch.save({"calls": [(call.args, call.kwargs) for call in loaded.calls], "eager": eager},
                   request["outputs_path"])
        measured = found.to_json()
        if request.get("bench") and not measured.get("eager_error"):
            from compile_lint.verifier.bench import time_compiled

            measured["timing"] = time_compiled(loaded.fresh_model, loaded.calls, device, request["bench"])
    except BaseException as error:  # noqa: BLE001 - reported with the files it imported
        return {**result, **error_result(request, error)}
    return {**result, "analysis": measured}


def die_with_parent() -> None:
    """Ask Linux to kill this worker when the tool that started it dies (even by SIGKILL,
    which leaves the tool no time to stop it); elsewhere a no-op."""
    from compile_lint.verifier.isolation import PARENT_PID_VARIABLE

    expected = os.environ.get(PARENT_PID_VARIABLE)
    if not expected or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(expected):  # the tool died before the request above was made
        os._exit(1)


def error_result(request: dict, error: BaseException) -> dict:
    """The result of a request that raised: what, where in the user's code, and the traceback."""
    from compile_lint.verifier.targets import TargetError

    kind = "oom" if _is_oom(error) else "target" if isinstance(error, TargetError) else "error"
    return {"target": request.get("target"), "error": _error(kind, error)}


def main(argv: list[str]) -> int:
    """Read the request, run it, write the result; errors become part of the result."""
    request_path, result_path = argv
    die_with_parent()
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
        result = error_result(request, error)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
