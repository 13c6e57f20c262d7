"""One side of the fix proof on real models (run by benchmarks/fix_realworld.py, in a subprocess).

The model libraries are imported from wherever `sys.path` finds them: the installed
(original) packages, or the fixed copies when the driver puts their folder first on
PYTHONPATH. Everything is CPU, backend "eager" (only Dynamo's verdict matters here).

    python benchmarks/fix_realworld_side.py trace OUT.json MODEL...
        the library lines each model's forward runs, eval and train mode (sys.settrace)
    python benchmarks/fix_realworld_side.py compare OUT_PREFIX MODEL
        OUT_PREFIX.json: graph breaks, fullgraph=True verdict, errors, eval and train mode;
        OUT_PREFIX.pt: eager outputs (eval; train twice, with the same seed, to tell whether
        the model is deterministic; train with layer-drop 0.5 and dropout 0, where the model
        has layer-drop) and the compiled eval output.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from typing import Any, Callable

import realworld_models
from realworld_probe import Collector, breaks_in, counting_backend

BATCH, LENGTH = 2, 16
TRAIN_SEED = 1234


def relative(path: str, roots: dict[str, str]) -> str | None:
    """`transformers/models/bert/modeling_bert.py` for a file under one of the library roots."""
    absolute = os.path.abspath(path)
    for library, root in roots.items():
        if absolute.startswith(root + os.sep):
            return library + "/" + os.path.relpath(absolute, root)
    return None


def library_roots() -> dict[str, str]:
    """The folder of each model library as imported here (installed, or a fixed copy)."""
    roots = {}
    for library in ("transformers", "timm", "diffusers"):
        roots[library] = realworld_models.library_root(f"{library}/x")
    return roots


def _error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def build(name: str, train: bool) -> tuple[Any, dict]:
    """The model under seed 0 (same weights on both sides) in the mode asked, and its inputs."""
    import torch

    torch.manual_seed(0)
    model, make_inputs = realworld_models.build(name)
    return model.train(train), make_inputs(BATCH, LENGTH)


def layerdrop_only(model: Any) -> bool:
    """Layer-drop at 0.5 and every dropout off: the layer-drop draws become the only randomness,
    so a rewrite of the skip (`torch.where(skip, h, layer(h))`) must give the same outputs.
    False when the model has no layer-drop attribute."""
    import torch

    found = False
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, float) and "layerdrop" in name:
                setattr(module, name, 0.5)
                found = True
            elif isinstance(value, float) and "dropout" in name:
                setattr(module, name, 0.0)
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return found


def executed_lines(run: Callable[[], Any], roots: dict[str, str]) -> dict[str, list[int]]:
    """The library lines (relative paths) that `run()` executes."""
    seen: dict[str, set[int]] = {}
    files: dict[str, str | None] = {}

    def local(frame, event, arg):
        if event == "line":
            seen[files[frame.f_code.co_filename]].add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        filename = frame.f_code.co_filename
        if filename not in files:
            files[filename] = relative(filename, roots)
        if files[filename] is None:
            return None
        seen.setdefault(files[filename], set()).add(frame.f_code.co_firstlineno)
        return local

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return {path: sorted(lines) for path, lines in seen.items()}


def trace(out: str, names: list[str]) -> None:
    """Executed library lines per model and mode."""
    import torch

    roots = library_roots()
    result: dict[str, Any] = {"roots": roots, "models": {}}
    for name in names:
        entry: dict[str, Any] = {}
        for mode in ("eval", "train"):
            try:
                model, inputs = build(name, mode == "train")
                with torch.set_grad_enabled(mode == "train"):
                    model(**inputs)  # first call: lazy initialisation is not the steady-state forward
                    entry[mode] = executed_lines(lambda: model(**inputs), roots)
            except Exception as error:  # noqa: BLE001 - a model that fails is reported, the rest run
                entry[f"{mode}_error"] = _error(error)
        result["models"][name] = entry
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(result, handle)


def plain(value: Any) -> Any:
    """Outputs as nested dicts/lists of CPU tensors (ModelOutput and dataclasses included)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if hasattr(value, "to_tuple"):
        return plain(dict(value))
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "__dataclass_fields__"):
        return {key: plain(getattr(value, key)) for key in value.__dataclass_fields__}
    return repr(type(value))


def dynamo_run(name: str, train: bool, fullgraph: bool, collector: Collector) -> dict:
    """Compile (backend eager) and call once; graph breaks from the log, graphs, error, output."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    collector.messages.clear()
    model, inputs = build(name, train)
    frames: list = []
    backend = "eager" if fullgraph else counting_backend(frames)
    entry: dict[str, Any] = {"error": None}
    try:
        with torch.set_grad_enabled(train):
            torch.manual_seed(TRAIN_SEED)
            entry["output"] = plain(torch.compile(model, backend=backend, fullgraph=fullgraph)(**inputs))
    except Exception as error:  # noqa: BLE001 - the verdict itself
        entry["error"] = _error(error)
    if not fullgraph:
        entry["breaks"] = breaks_in(collector.messages, call=1)
        entry["graphs"] = len(frames)
    torch._dynamo.reset()
    return entry


def compare(prefix: str, name: str) -> None:
    """Eager outputs and Dynamo's verdicts for one model on this side."""
    import torch

    roots = library_roots()
    summary: dict[str, Any] = {"model": name, "roots": roots, "errors": {}}
    outputs: dict[str, Any] = {}
    for mode in ("eval", "train"):
        train = mode == "train"
        try:
            for repeat in ("a", "b") if train else ("a",):
                model, inputs = build(name, train)
                with torch.set_grad_enabled(train):
                    torch.manual_seed(TRAIN_SEED)
                    outputs[f"{mode}_{repeat}"] = plain(model(**inputs))
        except Exception as error:  # noqa: BLE001
            summary["errors"][f"{mode}_eager"] = _error(error)
    try:
        for repeat in ("a", "b"):
            model, inputs = build(name, True)
            if not layerdrop_only(model):
                break
            torch.manual_seed(TRAIN_SEED)
            outputs[f"layerdrop_{repeat}"] = plain(model(**inputs))
    except Exception as error:  # noqa: BLE001
        summary["errors"]["layerdrop_eager"] = _error(error)
    collector = Collector()
    torch._logging.set_logs(graph_breaks=True)
    logging.getLogger("torch._dynamo").addHandler(collector)
    for mode in ("eval", "train"):
        for fullgraph in (False, True):
            entry = dynamo_run(name, mode == "train", fullgraph, collector)
            key = f"{mode}_{'fullgraph' if fullgraph else 'default'}"
            output = entry.pop("output", None)
            if output is not None:
                outputs[f"{key}_compiled"] = output
            for brk in entry.get("breaks", []):
                brk["file"] = relative(brk["file"], roots) or brk["file"]
                for frame in brk["frames"]:
                    frame["file"] = relative(frame["file"], roots) or frame["file"]
            summary[key] = entry
    torch.save(outputs, prefix + ".pt")
    with open(prefix + ".json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle)


def main(argv: list[str]) -> int:
    """`trace OUT.json MODEL...` or `compare OUT_PREFIX MODEL`."""
    command, out, names = argv[0], argv[1], argv[2:]
    try:
        if command == "trace":
            trace(out, names)
        else:
            compare(out, names[0])
    except Exception:  # noqa: BLE001 - the driver reads the traceback from stderr
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
