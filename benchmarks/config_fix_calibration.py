"""What each Dynamo setting a fix may write captures, and what it costs later in the traced code (torch 2.13 CPU).

Written for issue 40 (compiler-setting fixes, deferred logging, checks). Each case is a
function `f` compiled with backend="eager" (a counting backend) under the setting off and
on; each column reads
`ok` when the default compile gave one graph with no break and no recompile over the
calls, `fullgraph=True` passed and the outputs equal eager; `break N` (N graph breaks,
counted as Dynamo's graph-break counter or as the frames beyond the first); `eager`
when Dynamo compiled nothing (the whole frame ran eagerly); `recompile`; `differs`
(outputs differ from eager); or the error's first line (`fullgraph: ...` when only
`fullgraph=True` failed).

Sections: where a setting takes effect; capture_scalar_outputs (`.item()`, `int()`,
`.tolist()`) and its later uses; capture_dynamic_output_shape_ops (mask indexing,
nonzero, ...) and its later uses; allow_rnn; reorderable_logging_functions (which callables,
which arguments, a tensor mutated after the call); checks (`torch._check*`,
`torch._assert_async`: compiled and eager on good and bad input).

Usage: python benchmarks/config_fix_calibration.py > benchmarks/results/config_fix_calibration.txt
"""

from __future__ import annotations

import contextlib
import io
import logging
import textwrap
import warnings

import torch
import torch._dynamo
import torch.nn.functional as F
from torch import nn
from torch._dynamo.testing import CompileCounter
from torch._dynamo.utils import counters

torch.manual_seed(0)
LOGGER = logging.getLogger("config_fix_calibration")
LOGGER.addHandler(logging.NullHandler())
LOGGER.propagate = False
NAMESPACE = {"torch": torch, "F": F, "nn": nn, "warnings": warnings, "logging": logging, "logger": LOGGER,
             "lstm": nn.LSTM(6, 5, batch_first=True).eval(), "gru": nn.GRU(6, 5).eval(),
             "rnn": nn.RNN(6, 5, num_layers=2, bidirectional=True).eval()}

X = torch.randn(8, 6)
T1, T2 = torch.tensor([3, 1, 2]), torch.tensor([4, 1, 2])
M1 = torch.tensor([True, False, True, True, False, False, True, False])
M2 = torch.tensor([True, True, True, True, False, False, True, False])
IMG = torch.randn(2, 3, 8, 8)
B1, B2 = torch.tensor([1, 2, 3, 2]), torch.tensor([2, 1, 4, 3])
SEQ = torch.randn(2, 7, 6)

SCALARS = {"capture_scalar_outputs": True}
SHAPES = {"capture_dynamic_output_shape_ops": True}

# (section, label, source of `f`, calls, setting)
CASES = [
    ("capture_scalar_outputs", ".item() * x", "return x * t.sum().item()", [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "float(t) * x", "return x * float(t.sum())", [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "x[:int(t.max())]", "return x[:int(t.max())] * 2", [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "n = .item(); x[:n + 1]", "n = t.max().item()\nreturn x[:n + 1] * 2",
     [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "n = .item(); x.view(n * 2, -1)", "n = t.max().item()\nreturn x.view(n * 2, -1)",
     [(X, torch.tensor([4, 1])), (X, torch.tensor([2, 1]))], SCALARS),
    ("capture_scalar_outputs", "n = .item(); return (x * 2, n)", "n = t.max().item()\nreturn x * 2, n",
     [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "n = .item(); if n > 2 (later test)", "n = t.max().item()\ny = x * n\n"
     "if n > 2:\n    return y * 2\nreturn y", [(X, T1), (X, T1 - 2)], SCALARS),
    ("capture_scalar_outputs", "n = .item(); F.avg_pool2d(x, n)", "n = t.max().item()\nreturn F.avg_pool2d(x, n)",
     [(IMG, T1), (IMG, T2)], SCALARS),
    ("capture_scalar_outputs", "a, b = .item()s; x[..., a:b] (one dim)",
     "a = t[0].item()\nb = t[2].item()\nreturn x[..., a:b] * 2", [(IMG, B1), (IMG, B2)], SCALARS),
    ("capture_scalar_outputs", "a, b = .item()s; x[:, :, a:, b:] (starts in two dims, read)",
     "a = t[0].item()\nb = t[1].item()\nreturn x[:, :, a:, b:] * 2", [(IMG, B1), (IMG, B2)], SCALARS),
    ("capture_scalar_outputs", "a, b = .item()s; y[:, :, a:, b:] = 0 (two dims, written)",
     "a = t[0].item()\nb = t[1].item()\ny = x.clone()\ny[:, :, a:, b:] = 0\nreturn y", [(IMG, B1), (IMG, B2)],
     SCALARS),
    ("capture_scalar_outputs", ".tolist() float", "s = t.float().tolist()\nreturn x * s[0]", [(X, T1), (X, T2)],
     SCALARS),
    ("capture_scalar_outputs", "torch.split(x, t.tolist())", "return torch.split(x, t.tolist())[0] * 2",
     [(X, torch.tensor([3, 5])), (X, torch.tensor([2, 6]))], SCALARS),
    ("capture_scalar_outputs", "F.pad(x, t.tolist())", "return F.pad(x, t.tolist()) * 2", [(IMG, B1), (IMG, B2)],
     SCALARS),
    ("capture_scalar_outputs", "s = .tolist(); x[..., :s[1]]", "s = t.tolist()\nreturn x[..., :s[1]] * 2",
     [(IMG, B1), (IMG, B2)], SCALARS),
    ("capture_scalar_outputs", "for v in .tolist(): out * v", "out = x\nfor v in t.tolist():\n    out = out * v\n"
     "return out", [(X, T1), (X, T2)], SCALARS),
    ("capture_scalar_outputs", "a, b, w, h = .tolist(); x[:, :, b:b + h, a:a + w] (kornia erasing, read)",
     "a, b, w, h = t.tolist()\nreturn x[:, :, b : b + h, a : a + w] * 2", [(IMG, B1), (IMG, B2)], SCALARS),
    ("capture_scalar_outputs", "a, b, w, h = .tolist(); y[:, :, b:b + h, a:a + w] = v (written)",
     "a, b, w, h = t.tolist()\ny = x.clone()\ny[:, :, b : b + h, a : a + w] = 0.5\nreturn y",
     [(IMG, B1), (IMG, B2)], SCALARS),
    ("capture_scalar_outputs", "s = .tolist(); s[t[0]] (kornia motion blur: a list indexed by a tensor)",
     "s = t.tolist()\ni = t[0]\nreturn x * s[i]", [(X, torch.tensor([1, 2, 3])), (X, torch.tensor([0, 2, 1]))],
     SCALARS),
    ("capture_scalar_outputs", "s = .tolist(); if s[0] > 2 (later test)", "s = t.tolist()\nif s[0] > 2:\n"
     "    return x * 2\nreturn x", [(X, T1), (X, T1 - 2)], SCALARS),
    ("capture_scalar_outputs", "s = .tolist(); range(s[0])", "s = t.tolist()\nfor i in range(s[0]):\n"
     "    x = x + 1\nreturn x", [(X, T1), (X, T2)], SCALARS),
    ("capture_dynamic_output_shape_ops", "x[mask]", "return x[m] * 2", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "m.nonzero()", "return m.nonzero() * 2", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.where(m)", "return torch.where(m)[0] * 2", [(X, M1), (X, M2)],
     SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.unique", "return torch.unique(m.long() + 1) * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.unique_consecutive", "return torch.unique_consecutive(m.long()) * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.bincount", "return torch.bincount(m.long()) * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.bincount(minlength=4)", "return torch.bincount(m.long(), minlength=4)"
     " * 2", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.repeat_interleave(x, r)",
     "return torch.repeat_interleave(x, m.long() + 1, dim=0) * 2", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "x.masked_select", "return x.masked_select(m[:, None]) * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "torch.argwhere", "return torch.argwhere(m) * 2", [(X, M1), (X, M2)],
     SHAPES),
    ("capture_dynamic_output_shape_ops", "y = x[m]; y.view(y.shape[0] // 2, -1)",
     "y = x[m]\nreturn y.view(y.shape[0] // 2, -1)", [(X, M1), (X, M2 & M1)], SHAPES),
    ("capture_dynamic_output_shape_ops", "y = x[m]; torch.cat([y, x])", "y = x[m]\nreturn torch.cat([y, x]) * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "y = x[m]; x / len(y)", "y = x[m]\nreturn x / len(y)", [(X, M1), (X, M2)],
     SHAPES),
    ("capture_dynamic_output_shape_ops", "y = x[m]; torch.zeros(y.shape[0], 2)",
     "y = x[m]\nreturn torch.zeros(y.shape[0], 2) + 1", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "x[m] = x[m] * 2", "x = x.clone()\nx[m] = x[m] * 2\nreturn x",
     [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "y = x[m]; if y.numel() > 0 (later test)",
     "y = x[m]\nif y.numel() > 0:\n    return y * 2\nreturn y", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "for i in m.nonzero() (later loop)",
     "for i in m.nonzero():\n    x = x + i\nreturn x", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "len(m.nonzero().tolist()) (later .tolist())",
     "return x * len(m.nonzero().tolist())", [(X, M1), (X, M2)], SHAPES),
    ("capture_dynamic_output_shape_ops", "assert list(y.size()) == [n, 6], n a tensor (longformer)",
     "n = m.long().sum()\ny = x.new_zeros(n, 6) + 1\nassert list(y.size()) == [n, 6]\nreturn y * 2",
     [(X, M1), (X, M2)], SHAPES),
    ("allow_rnn", "nn.LSTM", "out, (h, c) = lstm(x * 2)\nreturn out.relu() + h.sum()",
     [(SEQ,), (SEQ * 2,)], {"allow_rnn": True}),
    ("allow_rnn", "nn.GRU", "out, h = gru(x * 2)\nreturn out.relu()", [(SEQ,), (SEQ * 2,)], {"allow_rnn": True}),
    ("allow_rnn", "nn.RNN, 2 layers, bidirectional", "out, h = rnn(x * 2)\nreturn out.relu()",
     [(SEQ,), (SEQ * 2,)], {"allow_rnn": True}),
    ("allow_rnn", "nn.LSTM on packed sequences",
     "p = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([7, 5]), batch_first=True)\nout, _ = lstm(p)\n"
     "return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)[0]", [(SEQ,)], {"allow_rnn": True}),
]

PRINTS = [
    ("print('literal')", "print('hello')\nreturn x * 2", lambda: {print}),
    ("print('y', y), y a tensor", "y = x * 2\nprint('y', y)\nreturn y + 1", lambda: {print}),
    ("print(f'y={y}')", "y = x * 2\nprint(f'y={y}')\nreturn y + 1", lambda: {print}),
    ("print('y', y); y.add_(100) after", "y = x * 2\nprint('y', y)\ny.add_(100)\nreturn y + 1", lambda: {print}),
    ("print('shape', x.shape)", "print('shape', x.shape)\nreturn x + 1", lambda: {print}),
    ("print(x.sum().item())", "print('s', x.sum().item())\nreturn x + 1", lambda: {print}),
    ("logger.info('hi %s', 3), Logger.info listed", "logger.info('hi %s', 3)\nreturn x + 1",
     lambda: {logging.Logger.info}),
    ("logger.info('hi %s', 3), the bound method listed", "logger.info('hi %s', 3)\nreturn x + 1",
     lambda: {LOGGER.info}),
    ("logging.info('hi')", "logging.info('hi')\nreturn x + 1", lambda: {logging.info}),
    ("warnings.warn('careful')", "warnings.warn('careful')\nreturn x + 1", lambda: {warnings.warn}),
    ("warnings.warn('careful', UserWarning)", "warnings.warn('careful', UserWarning)\nreturn x + 1",
     lambda: {warnings.warn}),
]

CHECKS = [
    ("if (x < 0).any(): raise ValueError('neg')", "if (x < 0).any():\n    raise ValueError('neg')\nreturn x * 2", {}),
    ("assert (x >= 0).all(), 'neg'", "assert (x >= 0).all(), 'neg'\nreturn x * 2", {}),
    ("torch._assert_async((x >= 0).all(), 'neg')", "torch._assert_async((x >= 0).all(), 'neg')\nreturn x * 2", {}),
    ("torch._check((x >= 0).all(), ...)", "torch._check((x >= 0).all(), lambda: 'neg')\nreturn x * 2", {}),
    ("torch._check_with(ValueError, (x >= 0).all().item(), ...)",
     "torch._check_with(ValueError, (x >= 0).all().item(), lambda: 'neg')\nreturn x * 2", {}),
    ("the same, capture_scalar_outputs on",
     "torch._check_with(ValueError, (x >= 0).all().item(), lambda: 'neg')\nreturn x * 2", SCALARS),
    ("torch._check_tensor_all_with(ValueError, (x >= 0).all(), ...), capture on",
     "torch._check_tensor_all_with(ValueError, (x >= 0).all(), lambda: 'neg')\nreturn x * 2", SCALARS),
]


def _function(body: str, parameters: str):
    namespace = dict(NAMESPACE)
    exec(f"def f({parameters}):\n" + textwrap.indent(body, "    "), namespace)  # noqa: S102 - our own cases
    return namespace["f"]


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0][:110]}"


def verdict(fn, calls, settings: dict) -> str:
    """One column: how `fn` compiles over `calls` with `settings` (see the module docstring)."""
    expected = [fn(*call) for call in calls]
    with torch._dynamo.config.patch(**settings):
        torch._dynamo.reset()
        counters.clear()
        counter = CompileCounter()
        compiled = torch.compile(fn, backend=counter)
        first = 0
        try:
            outputs = []
            for index, call in enumerate(calls):
                outputs.append(compiled(*call))
                if index == 0:
                    first = counter.frame_count
        except Exception as error:  # noqa: BLE001 - the compiler may raise anything
            return _first_line(error)
        breaks = sum(counters["graph_break"].values())
        torch._dynamo.reset()
        try:
            full = torch.compile(fn, backend="eager", fullgraph=True)
            for call in calls:
                full(*call)
            fullgraph = None
        except Exception as error:  # noqa: BLE001
            fullgraph = _first_line(error)
    torch._dynamo.reset()
    try:
        torch.testing.assert_close(outputs, expected)
    except AssertionError:
        return "differs"
    if first == 0:
        return "eager"
    if breaks or first > 1:
        return f"break {max(breaks, first - 1)}"
    if counter.frame_count > first:
        return "recompile"
    return f"fullgraph: {fullgraph}" if fullgraph else "ok"


def _settings_table() -> list[str]:
    lines = ["## Settings: off | on", "section | case | off | on"]
    for section, label, body, calls, setting in CASES:
        fn = _function(body, "x" if len(calls[0]) == 1 else "x, t" if section != "capture_dynamic_output_shape_ops"
                       else "x, m")
        lines.append(f"{section} | {label} | {verdict(fn, calls, {})} | {verdict(fn, calls, setting)}")
    return lines


def _placement() -> list[str]:
    """Where the setting must be written for the default compile to capture `.item()`."""
    fn = _function("return x * t.sum().item()", "x, t")
    call = (X, T1)

    def breaks(run) -> str:
        torch._dynamo.reset()
        counters.clear()
        try:
            run()
        except Exception as error:  # noqa: BLE001
            return _first_line(error)
        return f"break {sum(counters['graph_break'].values())}" if counters["graph_break"] else "ok"

    def patch_around_compile():
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            compiled = torch.compile(fn, backend="eager")
        compiled(*call)

    def patch_around_call():
        compiled = torch.compile(fn, backend="eager")
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            compiled(*call)

    def decorator_on_compiled_function():
        torch.compile(torch._dynamo.config.patch(capture_scalar_outputs=True)(fn), backend="eager")(*call)

    def options_inductor():
        torch.compile(fn, options={"capture_scalar_outputs": True})(*call)

    def line_after_compile_before_call():
        compiled = torch.compile(fn, backend="eager")
        torch._dynamo.config.capture_scalar_outputs = True
        try:
            compiled(*call)
        finally:
            torch._dynamo.config.capture_scalar_outputs = False

    cases = [("config.patch(...) around torch.compile(...), call outside", patch_around_compile),
             ("config.patch(...) around the compiled call", patch_around_call),
             ("@config.patch(...) on the compiled function", decorator_on_compiled_function),
             ("torch.compile(options={'capture_scalar_outputs': True}) (Inductor)", options_inductor),
             ("config line after torch.compile, before the first call", line_after_compile_before_call)]
    return ["## Where `.item()`'s setting takes effect", "placement | default compile"] + [
        f"{label} | {breaks(run)}" for label, run in cases]


def _printed(fn, calls, compiled: bool, settings: dict) -> tuple[str, str]:
    """(what ran, what it printed/logged/warned) for `fn` over `calls`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught, \
            torch._dynamo.config.patch(**settings):
        warnings.simplefilter("always")
        torch._dynamo.reset()
        counters.clear()
        runner = torch.compile(fn, backend="eager") if compiled else fn
        for call in calls:
            runner(*(arg.clone() for arg in call))
        breaks = sum(counters["graph_break"].values())
    text = out.getvalue() + "".join(f"{w.message}\n" for w in caught)
    return f"break {breaks}" if breaks else "no break", " / ".join(text.split("\n")).strip(" /")[:80]


def _logging_table() -> list[str]:
    lines = ["## reorderable_logging_functions: the default compile with the callable listed",
             "case | breaks | output eager | output compiled"]
    calls = [(torch.ones(3),), (torch.ones(3) * 2,)]
    for label, body, listed in PRINTS:
        fn = _function(body, "x")
        _, eager = _printed(fn, calls, False, {})
        breaks, compiled = _printed(fn, calls, True, {"reorderable_logging_functions": listed()})
        lines.append(f"{label} | {breaks} | {eager} | {compiled}")
    return lines


def _checks_table() -> list[str]:
    lines = ["## Checks: what each raises on bad input", "case | eager | default compile | fullgraph=True"]
    good, bad = (torch.ones(4),), (-torch.ones(4),)

    def outcome(runner) -> str:
        try:
            runner(*good)
        except Exception as error:  # noqa: BLE001
            return "good input: " + _first_line(error)
        try:
            runner(*bad)
        except Exception as error:  # noqa: BLE001
            return _first_line(error)[:70]
        return "no error"

    for label, body, settings in CHECKS:
        fn = _function(body, "x")
        row = [outcome(fn)]
        for fullgraph in (False, True):
            with torch._dynamo.config.patch(**settings):
                torch._dynamo.reset()
                counters.clear()
                row.append(outcome(torch.compile(fn, backend="eager", fullgraph=fullgraph)))
                if not fullgraph and counters["graph_break"]:
                    row[-1] += f" (break {sum(counters['graph_break'].values())})"
        lines.append(f"{label} | " + " | ".join(row))
    return lines


def main() -> None:
    """Print every table."""
    logging.getLogger("torch").setLevel(logging.ERROR)
    print(f"torch {torch.__version__}, backend=eager (a counting backend), CPU")
    for table in (_placement(), _settings_table(), _logging_table(), _checks_table()):
        print()
        print("\n".join(table))


if __name__ == "__main__":
    main()
