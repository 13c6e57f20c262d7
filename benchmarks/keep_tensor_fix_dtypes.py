"""Does the JIT201/JIT202 keep-the-tensor fix change results? Measures it on every device.

The fix turns `x OP t.item()` into `x OP t.detach()` and `x OP float(t)` into
`x OP t.detach().float()`. This script compares, for each dtype of `x` and `t` and each
arithmetic operator, the original with the fixed code, both eager and both compiled by
Inductor (the original with its Python number passed in), and prints every case where
dtype or values differ.

Run: python benchmarks/keep_tensor_fix_dtypes.py [--out results.txt]
"""

from __future__ import annotations

import argparse
import operator
import sys

import torch

X_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.bool)
T_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64)
OPERATORS = {"*": operator.mul, "/": operator.truediv, "+": operator.add, "-": operator.sub}


def _make(dtype: torch.dtype, shape: tuple, device: str) -> torch.Tensor:
    if dtype is torch.bool:
        return torch.rand(shape, device=device) > 0.5
    if dtype.is_floating_point:
        # Draw in float64 so float64 values carry digits float32 cannot hold.
        return (torch.randn(shape, device=device, dtype=torch.float64) * 3).to(dtype)
    return torch.randint(-5, 6, shape, device=device).to(dtype)


def _apply(op, x, scalar):
    try:
        return op(x, scalar)
    except RuntimeError as error:  # e.g. bool - bool is not defined: compare the refusal
        return type(error).__name__


def _compiled(op, x, other):
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: _apply(op, a, b), fullgraph=True)
    try:
        return compiled(x, other)
    except Exception as error:  # noqa: BLE001 - report, do not stop
        return type(error).__name__


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a.dtype == b.dtype and torch.equal(a, b)


def measure(device: str) -> list[str]:
    """Every (conversion, x dtype, t dtype, op, mode) whose fixed result differs."""
    torch.manual_seed(0)
    differences = []
    for conversion in ("item", "float"):
        for t_dtype in T_DTYPES:
            t = _make(t_dtype, (), device)
            if t_dtype.is_floating_point:
                t = t.abs() + 0.5  # keep division well away from zero
            else:
                t = t.abs() + 1
            python_value = t.item() if conversion == "item" else float(t)
            kept = t.detach() if conversion == "item" else t.detach().float()
            for x_dtype in X_DTYPES:
                x = _make(x_dtype, (64,), device)
                for symbol, op in OPERATORS.items():
                    original = _apply(op, x, python_value)
                    fixed_eager = _apply(op, x, kept)
                    # Inductor computes low-precision arithmetic in float32, so compare
                    # compiled with compiled: the original with its Python number passed in.
                    original_compiled = _compiled(op, x, python_value)
                    fixed_compiled = _compiled(op, x, kept)
                    for mode, before, after in (
                        ("eager", original, fixed_eager),
                        ("inductor", original_compiled, fixed_compiled),
                    ):
                        if not _same(before, after):
                            detail = (
                                f"{getattr(before, 'dtype', before)} vs {getattr(after, 'dtype', after)}"
                                if isinstance(before, str) or isinstance(after, str) or before.dtype != after.dtype
                                else f"max abs diff {(before.double() - after.double()).abs().max().item():.3g}"
                            )
                            differences.append(
                                f"{device} {conversion:5s} x:{str(x_dtype)[6:]:8s} t:{str(t_dtype)[6:]:8s} "
                                f"{symbol} {mode:8s} {detail}"
                            )
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    lines = [f"$ python {' '.join(sys.argv)}",
             f"torch {torch.__version__}; devices: {', '.join(devices)}"
             + (f" ({torch.cuda.get_device_name()})" if torch.cuda.is_available() else "")]
    cases = len(T_DTYPES) * len(X_DTYPES) * len(OPERATORS) * 2 * 2
    for device in devices:
        differences = measure(device)
        lines.append(f"{device}: {len(differences)} of {cases} (conversion, dtypes, op, mode) cases differ")
        lines += ["  " + d for d in differences]
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
