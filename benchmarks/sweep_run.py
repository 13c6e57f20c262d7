"""The architecture sweep: every buildable model of transformers, timm and diffusers on Dynamo.

Runs every unit of benchmarks/sweep_catalog.py (transformers model types, timm models,
diffusers blocks) through benchmarks/sweep_probe.py in a pool of long-lived worker
processes (one model library import per worker, not per model); a worker that crashes or
hangs is killed and replaced, costing only its unit. Results stream to
OUT/sweep_raw.jsonl.gz (one JSON object per variant, or per unit that could not be built,
with the reason), flushed as they come, so a run cut short keeps what it measured.

    python benchmarks/sweep_run.py --out DIR                      # everything, all cores
    python benchmarks/sweep_run.py --out DIR --units transformers/bert,timm/resnet18
    python benchmarks/sweep_run.py --out DIR --libraries timm --deadline 500
    python benchmarks/sweep_run.py --list                          # the units, one a line

Then `python benchmarks/sweep_truth.py DIR/sweep_raw.jsonl.gz` writes the ground truth and
`python benchmarks/sweep_score.py` scores compile-lint against it without running a model.
The committed run (benchmarks/results/sweep.md says where and how) used the `device`
machine's 16 CPU cores.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------------------- worker side

def worker_main() -> int:
    """Read unit names from stdin, answer each with one JSON line of its variants' results."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Dynamo's own log handlers print every traced line; only our collector needs them.
    devnull = os.open(os.devnull, os.O_WRONLY)
    answer = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    import sweep_catalog
    import sweep_probe

    paths = sweep_probe.PathMap(sweep_catalog.library_roots())
    variant_budget = float(os.environ.get("SWEEP_VARIANT_BUDGET", "60"))
    unit_budget = float(os.environ.get("SWEEP_UNIT_BUDGET", "150"))
    answer.write(json.dumps({"ready": True}) + "\n")
    fullgraph_verdict = os.environ.get("SWEEP_FULLGRAPH_VERDICT", "1") != "0"
    for line in sys.stdin:
        unit, _, rest = line.rstrip("\n").partition("\t")
        budget, _, wanted = rest.partition("\t")
        if not unit:
            continue
        started = time.perf_counter()
        budget_left = min(unit_budget, float(budget or unit_budget))
        try:
            found = sweep_catalog.variants(unit)
        except Exception as error:  # Skip and anything a model's constructor raises: the reason is the result
            answer.write(json.dumps({"unit": unit, "status": "skipped", "reason": sweep_catalog._one_line(error),
                                     "seconds": round(time.perf_counter() - started, 2)}) + "\n")
            found = []
        if wanted:
            found = [v for v in found if v.name in wanted.split("|")]
        for variant in found:
            left = budget_left - (time.perf_counter() - started)
            if left < 5:
                record = {"unit": unit, "variant": variant.name, "mode": variant.mode,
                          "status": "skipped", "reason": "unit budget spent"}
            else:
                try:
                    record = sweep_probe.probe_variant(variant, paths, budget=min(variant_budget, left),
                                                       fullgraph_verdict=fullgraph_verdict)
                except Exception as error:
                    record = {"unit": unit, "variant": variant.name, "mode": variant.mode,
                              "status": "probe-error", "error": sweep_catalog._one_line(error)}
            answer.write(json.dumps(record) + "\n")
        answer.write(json.dumps({"done": unit}) + "\n")
    return 0


# ----------------------------------------------------------------------------- parent side

class Worker:
    """One worker process and a line reader with a timeout."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=HERE,
                                        start_new_session=True)
        self.buffer = b""

    def send(self, unit: str, budget: float, variants: tuple = ()) -> None:
        self.process.stdin.write(f"{unit}\t{budget:.0f}\t{'|'.join(variants)}\n".encode())
        self.process.stdin.flush()

    def read_line(self, timeout: float) -> Optional[str]:
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None  # the worker died
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()


def run(units: list[str], out_dir: str, jobs: int, unit_timeout: float, deadline: float, grace: float = 40,
        only: Optional[dict] = None) -> dict:
    """Probe `units` with `jobs` workers; no unit starts after `deadline` seconds, none runs past it + `grace`."""
    os.makedirs(out_dir, exist_ok=True)
    raw_path = os.path.join(out_dir, "sweep_raw.jsonl.gz")
    sink = gzip.open(raw_path, "at", compresslevel=6)
    lock = threading.Lock()
    todo: "queue.Queue[str]" = queue.Queue()
    for unit in units:
        todo.put(unit)
    started = time.monotonic()
    stats = {"units_done": 0, "units_failed": 0, "variants": 0}

    def write(record: dict) -> None:
        with lock:
            sink.write(json.dumps(record) + "\n")
            sink.flush()

    def manage() -> None:
        worker = None
        while True:
            if time.monotonic() - started > deadline:
                break
            try:
                unit = todo.get_nowait()
            except queue.Empty:
                break
            if worker is None:
                worker = Worker()
                if worker.read_line(120) is None:
                    write({"unit": unit, "status": "worker-start-failed"})
                    worker.kill()
                    worker = None
                    continue
            # The unit's budget: its own limit, cut to what is left before the deadline plus a grace.
            budget = max(20.0, min(unit_timeout, deadline + grace - (time.monotonic() - started)))
            worker.send(unit, budget, tuple((only or {}).get(unit, ())))
            unit_deadline = time.monotonic() + budget + 30
            answered = 0
            while True:
                line = worker.read_line(max(1.0, unit_deadline - time.monotonic()))
                if line is None:
                    worker.kill()
                    worker = None
                    write({"unit": unit, "status": "timeout-or-crash", "variants_answered": answered,
                           "reason": f"no answer within {budget + 30:.0f}s or the worker died"})
                    with lock:
                        stats["units_failed"] += 1
                    break
                record = json.loads(line)
                if "done" in record:
                    with lock:
                        stats["units_done"] += 1
                    break
                answered += 1
                write(record)
                with lock:
                    stats["variants"] += "variant" in record
            with lock:
                done = stats["units_done"] + stats["units_failed"]
            if done % 25 == 0:
                print(f"[{time.monotonic() - started:6.0f}s] {done}/{len(units)} units", flush=True)
        if worker is not None:
            worker.process.stdin.close()
            worker.kill()

    threads = [threading.Thread(target=manage, daemon=True) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    leftover = []
    while not todo.empty():
        leftover.append(todo.get_nowait())
    for unit in leftover:
        write({"unit": unit, "status": "not-run", "reason": "sweep deadline reached"})
    sink.close()
    stats.update(seconds=round(time.monotonic() - started, 1), not_run=len(leftover), jobs=jobs)
    return stats


def environment() -> dict:
    """Versions and machine facts stored with the results."""
    import platform

    info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    from importlib.metadata import version

    for name in ("torch", "transformers", "timm", "diffusers", "huggingface_hub", "tokenizers"):
        try:
            info[name] = version(name)
        except Exception:
            info[name] = None
    return info


def main(argv: Optional[list[str]] = None) -> int:
    """Parse the options, pick the units, run the pool, write the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="folder for sweep_raw.jsonl.gz and sweep_run.json")
    parser.add_argument("--units", help="comma-separated units (default: the whole catalog)")
    parser.add_argument("--units-file", help="file of units to run, one a line, in this order "
                                             "(benchmarks/results/sweep_units.txt is the committed run's)")
    parser.add_argument("--libraries", default="transformers,diffusers,timm", help="which libraries, in this order")
    parser.add_argument("--variants-file", help="file of 'unit<TAB>variant' lines: run only these variants")
    parser.add_argument("--no-fullgraph-verdict", action="store_true",
                        help="skip the fullgraph=True compile of breaking runs (when re-measuring runs "
                             "whose verdict is known)")
    parser.add_argument("--skip", help="file of units not to run (one a line), e.g. those a previous run finished")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes (default: all cores)")
    parser.add_argument("--unit-timeout", type=float, default=240, help="seconds one unit may take (default 240)")
    parser.add_argument("--deadline", type=float, default=1e9, help="stop starting units after this many seconds")
    parser.add_argument("--list", action="store_true", help="print the units and exit")
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    import sweep_catalog

    if args.units:
        units = [u.strip() for u in args.units.split(",") if u.strip()]
    elif args.units_file:
        with open(args.units_file, encoding="utf-8") as handle:
            units = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    else:
        listers = {"transformers": lambda: [f"transformers/{t}" for t in sweep_catalog.transformers_model_types()],
                   "diffusers": lambda: [f"diffusers/{n}" for n in sweep_catalog.diffusers_model_names()],
                   "timm": lambda: [f"timm/{n}" for n in sweep_catalog.timm_model_names()]}
        units = [unit for library in args.libraries.split(",") for unit in listers[library.strip()]()]
    only = None
    if args.variants_file:
        only = {}
        with open(args.variants_file, encoding="utf-8") as handle:
            for line in handle:
                unit, _, variant = line.strip().partition("\t")
                if unit and variant:
                    only.setdefault(unit, []).append(variant)
        units = list(only)
    if args.no_fullgraph_verdict:
        os.environ["SWEEP_FULLGRAPH_VERDICT"] = "0"
    if args.skip:
        with open(args.skip, encoding="utf-8") as handle:
            skip = {line.strip() for line in handle}
        units = [u for u in units if u not in skip]
    if args.list:
        print("\n".join(units))
        return 0
    if not args.out:
        parser.error("--out is required")
    env = environment()
    print(f"{len(units)} units, {args.jobs} workers; {env}", flush=True)
    stats = run(units, args.out, args.jobs, args.unit_timeout, args.deadline, only=only)
    with open(os.path.join(args.out, "sweep_run.json"), "w", encoding="utf-8") as handle:
        json.dump({"environment": env, "stats": stats, "argv": sys.argv[1:]}, handle, indent=1)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
