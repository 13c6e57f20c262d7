"""Which uses of a scalar read from a tensor compile once `capture_scalar_outputs` is on (torch 2.13 CPU).

Written for issue 24 item 3: `.item()` (JIT201), `int(t.max())` (JIT202) and a tensor passed
straight as a size (JIT204) withhold their fix where the number is a size, an index or a
slice bound. Fix (b) keeps the read and sets `torch._dynamo.config.capture_scalar_outputs
= True` before the compile call; it may only be offered for the uses that then compile.

Each case is a function of `x` (8x6 floats) and `t` that reads a number from `t` one
way (READS: `.item()` of a value computed in the graph or of a 0-d tensor passed in,
`int()`, or the 0-d tensor itself, computed or passed in) and uses it once (USES). It is
compiled with backend="eager" four ways:
capture off / on, each with the default `fullgraph=False` and with `fullgraph=True`; it is
called with t=3 then t=4. A column reads `ok` when the call compiled as one frame with no
graph break (a counting backend, Dynamo's graph-break counter), no recompile over the two
values, and the outputs equal eager; `break N` when it ran with N graph breaks; `no graph`
when Dynamo compiled nothing (a break before any op, which the counter may miss);
`recompile` when the second value compiled again; else the error's first line.

Usage: python benchmarks/scalar_size_capture.py > benchmarks/results/scalar_size_capture.txt
"""

from __future__ import annotations

import torch
import torch._dynamo
import torch._dynamo.testing
import torch._dynamo.utils
import torch.nn.functional as F

VALUES = (3, 4)


def _x() -> torch.Tensor:
    return torch.arange(48.0).reshape(8, 6)


# Each use, with N standing for the number read; `n` in a label is that number.
USES = {
    "x[:n]": "x[:N] * 2",
    "x[n:]": "x[N:] * 2",
    "x[:, :n]": "x[:, :N] * 2",
    "x[n]": "x[N] * 2",
    "x[:, n]": "x[:, N] * 2",
    "torch.zeros(n)": "torch.zeros(N) + x.sum()",
    "torch.zeros(n, 6)": "torch.zeros(N, 6) + x[0]",
    "torch.ones(n)": "torch.ones(N) * x.sum()",
    "torch.full((n,), 2.0)": "torch.full((N,), 2.0) * x.sum()",
    "torch.empty(n).fill_(1)": "torch.empty(N).fill_(1.0) * x.sum()",
    "x.new_zeros(n, 6)": "x.new_zeros(N, 6) + x[0]",
    "x.new_ones(n)": "x.new_ones(N) * x.sum()",
    "torch.arange(n)": "torch.arange(N) * x.sum()",
    "torch.randn(n) (shape only)": "torch.randn(N).shape[0] * x",
    "F.pad(x, (0, n))": "F.pad(x, (0, N)) * 2",
    "x.view(n, -1)": "x.view(N, -1) * 2",
    "x.reshape(n, -1)": "x.reshape(N, -1) * 2",
    "x[:1].expand(n, 6)": "x[:1].expand(N, 6) * 2",
    "x[:1].repeat(n, 1)": "x[:1].repeat(N, 1) * 2",
    "torch.split(x, n)": "torch.split(x, N)[0] * 2",
    "x.split(n)": "x.split(N)[0] * 2",
    "x.narrow(0, 0, n)": "x.narrow(0, 0, N) * 2",
    "x.narrow(0, n, 2)": "x.narrow(0, N, 2) * 2",
    "x.topk(n)": "x.topk(N).values * 2",
    "x.roll(n, 0)": "x.roll(N, 0) * 2",
    # the uses that are not sizes (the fix must not be offered there)
    "if n > 3": "x * 2 if N > 3 else x",
    "range(n)": "sum(x[i] for i in range(N))",
    "return n": "(x * 2, N)",
    "x * n (arithmetic)": "x * N",
}

# How the number is read, and the `t` it is read from (v: the value 3 or 4).
READS = {
    "t.max().item()": lambda v: torch.tensor([v, 1, 2]),        # JIT201, a value computed in the graph
    "t.item()": lambda v: torch.tensor(v),                      # JIT201, a 0-d tensor passed in
    "int(t.max())": lambda v: torch.tensor([v, 1, 2]),          # JIT202
    "t.max()": lambda v: torch.tensor([v, 1, 2]),               # JIT204: the 0-d tensor itself
    "t": lambda v: torch.tensor(v),                             # JIT204: a 0-d tensor passed in
}


def _first_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip().splitlines()[0]
    return text[:110]


def measure(fn, make_t, capture: bool, fullgraph: bool) -> str:
    """One verdict: `ok`, `break N`, `recompile`, `differs` or the error's first line."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    counter = torch._dynamo.testing.CompileCounter()
    with torch._dynamo.config.patch(capture_scalar_outputs=capture):
        compiled = torch.compile(fn, backend=counter, fullgraph=fullgraph)
        try:
            frames_after = []
            for value in VALUES:
                t = make_t(value)
                got, expected = compiled(_x(), t), fn(_x(), t)
                torch.testing.assert_close(got, expected)
                frames_after.append(counter.frame_count)
        except AssertionError as error:
            return "differs: " + _first_line(error)
        except Exception as error:  # noqa: BLE001 - the compiler's error is the verdict
            return _first_line(error)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if breaks or frames_after[0] > 1:
        return f"break {max(breaks, frames_after[0] - 1)}"
    if frames_after[0] == 0:
        return "no graph (ran eagerly)"  # a break before any op can leave no graph and no counter
    if frames_after[-1] > frames_after[0]:
        return "recompile"
    return "ok"


EDGE_VALUES = (0, -2, 20, 6, -9)  # x has 8 rows and 6 columns: empty, negative, past the end


def edge_verdict(fn, value: int) -> str:
    """Eager against capture on, fullgraph=True, for one value: `equal`, `DIFFERS`, or both errors."""
    torch._dynamo.reset()
    t = torch.tensor([value, value - 100])
    try:
        expected = fn(_x(), t)
    except Exception as error:  # noqa: BLE001 - eager's error is half the verdict
        expected = f"eager {type(error).__name__}"
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        try:
            got = torch.compile(fn, backend="eager", fullgraph=True)(_x(), t)
        except Exception as error:  # noqa: BLE001
            got = f"compiled {type(error).__name__}"
    if isinstance(expected, str) or isinstance(got, str):
        return (f"{expected if isinstance(expected, str) else 'eager ok'} / "
                f"{got if isinstance(got, str) else 'compiled ok'}")
    try:
        torch.testing.assert_close(got, expected)
    except AssertionError:
        return "DIFFERS"
    return "equal"


def edges() -> None:
    """The size uses that compiled, at values past the ends: the compiled code must fail where eager fails."""
    print(f"\nn = t.max().item(), capture on, fullgraph=True, against eager, at n = {EDGE_VALUES}")
    for name in CLEAN_WITH_CAPTURE:
        fn = eval(f"lambda x, t: {USES[name].replace('N', 't.max().item()')}", {"torch": torch, "F": F})  # noqa: S307
        print(f"{name} | " + "; ".join(f"{v}: {edge_verdict(fn, v)}" for v in EDGE_VALUES), flush=True)


# The uses that compiled `ok` for every `.item()` / `int()` read above (compile_lint's fix offers itself for these).
CLEAN_WITH_CAPTURE = ("x[:n]", "x[n:]", "x[:, :n]", "x[n]", "torch.zeros(n)", "torch.arange(n)", "x.new_zeros(n, 6)",
                      "F.pad(x, (0, n))", "x[:1].expand(n, 6)", "x[:1].repeat(n, 1)", "x.narrow(0, 0, n)", "x.topk(n)",
                      "x.roll(n, 0)")


def main() -> None:
    print(f"torch {torch.__version__}, backend=eager (a counting backend), CPU; calls with t = {VALUES}")
    modes = [(False, False), (False, True), (True, False), (True, True)]
    header = ["case"] + [f"capture={'on' if c else 'off'} fullgraph={f}" for c, f in modes]
    print(" | ".join(header))
    for read, make_t in READS.items():
        for name, use in USES.items():
            fn = eval(f"lambda x, t: {use.replace('N', read)}", {"torch": torch, "F": F})  # noqa: S307 - our own table
            verdicts = [measure(fn, make_t, capture, fullgraph) for capture, fullgraph in modes]
            print(" | ".join([f"n = {read}: {name}"] + verdicts), flush=True)
    edges()


if __name__ == "__main__":
    main()
