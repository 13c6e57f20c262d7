"""JIT405 io-in-compiled-region: File, network or process I/O (`open`, `torch.save`, `json.dump`,
`requests.get`) in forward."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name, made_by


class IoInCompiledRegion(Rule):
    """File, network or process I/O (`open`, `torch.save`, `json.dump`, `requests.get`) in forward.

    Why: I/O reaches outside the program; Dynamo cannot put it in a graph and skips it
    ("Attempted to call function marked as skipped", "Failed to trace builtin operator").
    `os.environ.get`, `os.getenv` and `os.path.join` are fine on torch 2.13.

    Instead: load and save outside the compiled call (in `__init__`, the data loader or
    the training loop), and pass tensors in.
    """

    code = "JIT405"
    name = "io-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    gb_types = (  # the same pattern, reported differently
        "Failed to trace builtin operator",
        "Unsupported method call",
    )
    message = ("file/network I/O breaks the graph; do it outside the compiled region and pass tensors in, e.g. load "
               "in `__init__`: `self.register_buffer(\"table\", torch.load(path))`")
    steps = ("self.register_buffer(\"table\", torch.load(path))",)
    invalid = [
        Invalid(
            """
            import os

            import torch
            from torch import nn

            class ActivationDump(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.fc(x)
                    torch.save(h, os.devnull)
                    return h
            """,
            entry="ActivationDump",
            lines=[13],
        ),
        Invalid(
            """
            import json

            from torch import nn

            class Labeler(nn.Module):
                def forward(self, logits):
                    with open(__file__) as handle:
                        lines = handle.read().count("\\n")
                    return logits * lines
            """,
            entry="Labeler",
            lines=[7],
        ),
        Invalid(
            """
            import json

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.meta = json.dumps({"rows": x.shape[0]})
                    return x * 2
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import os

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if os.environ.get("COMPILE_LINT_DEMO_FLAG"):
                        x = x * 2
                    return x * (2 if os.getenv("COMPILE_LINT_OTHER") else 1)
            """,
        ),
        Valid(
            """
            import json
            import os

            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self, config_path=None):
                    super().__init__()
                    self.labels = json.loads('["cat", "dog"]')
                    self.cache_dir = os.path.join("/tmp", "cache")
                    self.fc = nn.Linear(8, len(self.labels))

                def forward(self, x):
                    return self.fc(x)
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def export(model, path):
                torch.save(model.state_dict(), path)

            class Model(nn.Module):
                def forward(self, x):
                    saved = x.clone()
                    return saved * 2
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = call_name(self.context, node) or ""
        if self.context.qualname(node.func) is not None and (name in _IO_CALLS or name.startswith(_IO_PREFIXES)):
            self.report(node)
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "tofile":
            self.report(node)
        elif func.attr.value in _PATH_IO_METHODS:
            if any(maker.startswith("pathlib.") for maker in made_by(self.context, func.value)):
                self.report(node)


_IO_CALLS = frozenset(
    {
        "builtins.open", "builtins.input", "io.open", "gzip.open", "torch.save", "torch.load",
        "torch.hub.load_state_dict_from_url", "numpy.save", "numpy.savez", "numpy.savez_compressed",
        "numpy.load", "numpy.loadtxt", "numpy.savetxt", "numpy.genfromtxt", "numpy.fromfile",
        "json.load", "json.dump", "json.loads", "json.dumps",
        "os.makedirs", "os.mkdir", "os.remove", "os.unlink", "os.rename", "os.replace",
        "os.listdir", "os.scandir", "os.walk", "os.stat", "os.path.exists", "os.path.isfile",
        "os.path.isdir", "os.path.getsize", "os.path.getmtime",
        "safetensors.torch.save_file", "safetensors.torch.load_file", "h5py.File",
    }
)


_IO_PREFIXES = (
    "pickle.", "shutil.", "tempfile.", "glob.", "requests.", "urllib.request.", "http.client.",
    "socket.", "subprocess.",
)


_PATH_IO_METHODS = frozenset(
    {"read_text", "write_text", "read_bytes", "write_bytes", "open", "exists", "is_file", "is_dir",
     "mkdir", "unlink", "iterdir", "glob", "rglob", "touch", "stat"}
)

