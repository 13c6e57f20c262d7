"""JIT407 untraceable-library-call: A call into scipy, pandas, scikit-learn, OpenCV, PIL,
librosa... in a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.torch_tables import SKIPPED_THIRD_PARTY_MODULES


class UntraceableLibraryCall(Rule):
    """A call into scipy, pandas, scikit-learn, OpenCV, PIL, librosa... in a compiled region.

    Why: Dynamo traces torch and (through torch's own implementation) numpy; other
    libraries run compiled C code or numpy internals it does not model, and its trace
    rules skip some outright (pandas, scikit-learn, tqdm, networkx... its third-party skip
    list, read from the installed torch), so the graph breaks ("Unsupported method call", "Attempted to call function marked as skipped";
    measured with scipy and pandas on torch 2.13).

    Instead: use the torch equivalent (`torch.special.expit`, `torch.signal.windows`,
    `torch.fft`), precompute constants in `__init__`, or wrap the call in a
    `torch.library.custom_op` so it becomes one opaque node of the graph.
    """  # noqa: E501 - the rule's documentation (--explain, docs/rules.md) as written

    code = "JIT407"
    name = "untraceable-library-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    gb_types = (  # the same pattern, reported differently
        "Attempted to call function marked as skipped",
        "Attempted to inline function marked as skipped",
    )
    message = (
        "calls into this library are not traceable and break the graph; use a torch "
        "equivalent, precompute in `__init__`, or wrap the call in "
        "`@torch.library.custom_op(\"mylib::name\", mutates_args=())`"
    )
    steps = ("@torch.library.custom_op(\"mylib::name\", mutates_args=())",)
    invalid = [
        Invalid(
            """
            import torch
            from scipy.optimize import linear_sum_assignment
            from torch import nn

            class HungarianMatcher(nn.Module):
                @torch.no_grad()
                def forward(self, pred_logits, tgt_ids):
                    cost = -pred_logits.softmax(-1)[:, tgt_ids]
                    rows, cols = linear_sum_assignment(cost.cpu())
                    return torch.as_tensor(rows), torch.as_tensor(cols)
            """,
            calls="[(torch.randn(6, 5), torch.tensor([0, 2, 4]))]",
            entry="HungarianMatcher",
            lines=[9],
        ),
        Invalid(
            """
            import scipy.special
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(scipy.special.expit(x.numpy()))
            """,
            entry="Gate",
            lines=[7],
        ),
        Invalid(
            """
            import pandas as pd
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    frame = pd.DataFrame(x.numpy())
                    return torch.as_tensor(frame.values) * 2
            """,
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn
            from tqdm import tqdm

            class Refine(nn.Module):
                def forward(self, x):
                    for _ in tqdm(range(3), disable=True):
                        x = x * 0.5 + 1
                    return x
            """,
            entry="Refine",
            lines=[7],
            note="tqdm is on Dynamo's third-party skip list (the generated table)",
        ),
    ]
    valid = [
        Valid(
            """
            import scipy.signal
            import torch
            from torch import nn

            class Spectrogram(nn.Module):
                def __init__(self):
                    super().__init__()
                    window = scipy.signal.get_window("hann", 8)
                    self.register_buffer("window", torch.as_tensor(window, dtype=torch.float32))

                def forward(self, x):
                    return x * self.window
            """,
            entry="Spectrogram",
        ),
        Valid(
            """
            import pandas as pd
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if isinstance(x, pd.DataFrame):
                        x = torch.as_tensor(x.values)
                    return torch.special.expit(x)
            """,
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(1 / (1 + np.exp(-x.numpy())))
            """,
            entry="Gate",
        ),
        Valid(
            """
            import torch
            from scipy import __version__ as SCIPY_VERSION_STRING
            from torch import nn

            class Scale(nn.Module):
                def forward(self, x):
                    major = tuple(int(part) for part in SCIPY_VERSION_STRING.split(".")[:2])[0]
                    return x * major
            """,
            entry="Scale",
            note="a `str` method on the library's version string (torchvision's `PILLOW_VERSION_STRING.split('.')`)",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name.startswith(_UNTRACEABLE_LIBRARIES) and not self._str_method(node.func):
            self.report(node)

    def _str_method(self, func: cst.BaseExpression) -> bool:
        """A method of a value known to be a `str` (`PIL.__version__.split(".")`): Dynamo folds it as a constant."""
        if not isinstance(func, cst.Attribute):
            return False
        receiver = func.value
        if isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        qualified = self.context.qualname(receiver) or ""
        return qualified.rpartition(".")[2] in _STR_MODULE_ATTRIBUTES


# Module attributes that are strings in every library (a package's version, its name and file).
_STR_MODULE_ATTRIBUTES = frozenset({"__version__", "__name__", "__file__", "__doc__", "__package__"})

# Dynamo's third-party skip list (trace_rules.THIRDPARTY_SKIPLIST, from the generated table),
# less numpy, whose calls Dynamo traces through its own torch._numpy model; plus libraries
# the list does not name that run native code Dynamo cannot trace (measured on 2.13 with
# scipy and pandas; the others by the same token).
_UNTRACEABLE_LIBRARIES = tuple(
    f"{module}." for module in sorted(
        {*SKIPPED_THIRD_PARTY_MODULES, "scipy", "cv2", "PIL", "skimage", "librosa", "soundfile", "numba", "jax"}
        - {"numpy"}
    )
)
