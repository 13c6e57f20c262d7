"""Lint a large real codebase with compile-lint and its peers, in one run, on the same files.

Usage: python benchmarks/speed.py [--repeat 3] [--fraction 1.0] [--scales 1,2,4] [--jobs N]
       python benchmarks/speed.py --source /path/to/unpacked --slice modeling --limit 40 --server

The corpus is the Python source of transformers (models/), timm and diffusers at pinned
versions, fetched with `pip download --no-deps` into benchmarks/.cache/ (git-ignored), or
taken from `--source`, a directory where the same pinned packages are unpacked.
`--slice modeling` lints only transformers' `models/*/modeling_*.py` (model files: every
one needs the full parse); `--limit N` takes N files spread over the slice.

Every tool runs as a whole process (start-up included), single-process and with all
cores, interleaved round by round so that a busy machine slows every tool alike; the
table reports the median wall time, the median CPU time of the tool's process tree
(user + system: on a shared machine, the share of the cores a run gets varies, its CPU
time much less), lines per second, the peak resident memory of the largest process of
the tool's process tree (polled), and the ratios to compile-lint and to the libcst parse.

Tools: compile-lint --select ALL (cold: cache removed first; warm: nothing changed),
TorchFix --select ALL (own venv: it pins an older libcst), flake8 default checks (own
venv: no plugins), ruff --select ALL --no-cache, a bare libcst parse of every file
(benchmarks/libcst_parse.py), the floor of any libcst-based linter, and Python's
`ast.parse` of every file (the same script, `--parser ast`). With `--server`, the language
server's latency is measured too (benchmarks/server_latency.py). With `--base-tree DIR`
(a directory holding an earlier commit's `compile_lint/`), that tree's CLI runs too, as
"compile-lint base", in the same rounds: a before/after comparison that a machine whose
speed drifts between runs cannot skew.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from typing import Optional

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".cache")
RESULTS = os.path.join(HERE, "results")
PINNED = {"transformers": "5.23.0", "timm": "1.0.31", "diffusers": "0.42.1"}
# What of each package is linted: transformers' models/, all of timm and diffusers.
SUBTREES = {"transformers": "transformers/models", "timm": "timm", "diffusers": "diffusers"}
PEER_VENVS = {"torchfix": ["torchfix==0.7.0"], "flake8": ["flake8>=7"]}
POLL_SECONDS = 0.05


def _venv_python(name: str) -> str:
    return os.path.join(CACHE, f"{name}-venv", "bin", "python")


def ensure_peer_venv(name: str) -> str:
    """A venv under .cache with one peer installed (TorchFix pins libcst<1.6; flake8 must load no plugin)."""
    python = _venv_python(name)
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", os.path.dirname(os.path.dirname(python))], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", *PEER_VENVS[name]], check=True)
    return python


def ensure_corpus(fraction: float, source: Optional[str] = None, slice_name: str = "all",
                  limit: Optional[int] = None) -> tuple[str, list[str]]:
    """Download and unpack the pinned packages (or use `source`); the relative paths of the files to lint."""
    if source is not None:
        base = os.path.abspath(source)
    else:
        base = _download_corpus()
    if slice_name == "modeling":
        models = os.path.join(base, SUBTREES["transformers"])
        files = sorted(
            os.path.relpath(os.path.join(models, model, name), base)
            for model in os.listdir(models) if os.path.isdir(os.path.join(models, model))
            for name in os.listdir(os.path.join(models, model))
            if name.startswith("modeling_") and name.endswith(".py")
        )
    else:
        files = sorted(
            os.path.relpath(os.path.join(directory, name), base)
            for subtree in SUBTREES.values()
            for directory, _, names in os.walk(os.path.join(base, subtree))
            for name in names
            if name.endswith(".py")
        )
    if fraction < 1.0:
        step = round(1 / fraction)
        files = files[::step]
    if limit is not None and len(files) > limit:
        step = len(files) / limit
        files = [files[int(index * step)] for index in range(limit)]
    return base, files


def _download_corpus() -> str:
    """The pinned packages, downloaded and unpacked into .cache/corpus."""
    wheels = os.path.join(CACHE, "wheels")
    base = os.path.join(CACHE, "corpus")
    os.makedirs(wheels, exist_ok=True)
    for package, version in PINNED.items():
        prefix = f"{package}-{version}-"
        wheel = next((w for w in os.listdir(wheels) if w.startswith(prefix) and w.endswith(".whl")), None)
        if wheel is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            f"{package}=={version}", "-d", wheels], check=True)
            wheel = next(w for w in os.listdir(wheels) if w.startswith(prefix) and w.endswith(".whl"))
        if not os.path.isdir(os.path.join(base, package)):
            with zipfile.ZipFile(os.path.join(wheels, wheel)) as archive:
                members = [m for m in archive.namelist() if m.startswith(package + "/") and m.endswith(".py")]
                archive.extractall(base, members)
    return base


def build_tree(base: str, files: list[str], scale: int, tag: str) -> tuple[str, int]:
    """A directory with `scale` copies of the corpus under new names (hard links); its line count."""
    root = os.path.join(CACHE, "work", f"{tag}-x{scale}")
    shutil.rmtree(root, ignore_errors=True)
    lines = 0
    for copy in range(scale):
        for relative in files:
            target = os.path.join(root, f"copy{copy}", relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            source = os.path.join(base, relative)
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
            with open(source, "rb") as handle:
                lines += handle.read().count(b"\n")
    # A standalone config: lint everything here (the tree is git-ignored in this repo).
    with open(os.path.join(root, "compile-lint.toml"), "w", encoding="utf-8") as handle:
        handle.write("respect-gitignore = false\n")
    return root, lines


def measure(command: list[str], cwd: str, env: Optional[dict] = None) -> tuple[float, float, int, float]:
    """Run `command`; (wall seconds, peak RSS MiB of any one process in its tree, exit code, CPU seconds).

    The CPU time is the user and system time of the process and every process it waited
    for (its workers), from this process's children's resource usage before and after.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = psutil.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks: dict[int, int] = {}
    while process.poll() is None:
        try:
            for member in [process, *process.children(recursive=True)]:
                try:
                    rss = member.memory_info().rss
                    peaks[member.pid] = max(peaks.get(member.pid, 0), rss)
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        time.sleep(POLL_SECONDS)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.returncode not in (0, 1):
        sys.stderr.write(f"warning: {' '.join(command)} exited {process.returncode}: {stderr[-500:]}\n")
    return wall, max(peaks.values(), default=0) / 2**20, process.returncode, cpu


def tool_commands(jobs: int, config: str) -> dict[str, tuple[list[str], dict]]:
    """name -> (command run in the tree's directory, extra environment)."""
    compile_lint = [sys.executable, "-m", "compile_lint", "--select", "ALL", "--config", config,
                    "--exit-zero", "--output-format", "concise", "--jobs", str(jobs), "."]
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or "ruff"
    return {
        "compile-lint": (compile_lint, {}),
        "libcst parse": ([sys.executable, os.path.join(HERE, "libcst_parse.py"), ".", "--jobs", str(jobs)], {}),
        "ast.parse": ([sys.executable, os.path.join(HERE, "libcst_parse.py"), ".", "--jobs", str(jobs),
                       "--parser", "ast"], {}),
        "TorchFix": ([os.path.join(os.path.dirname(_venv_python("torchfix")), "torchfix"), "--select", "ALL",
                      "--jobs", str(jobs), "."], {}),
        "flake8": ([_venv_python("flake8"), "-m", "flake8", "--exit-zero", "--jobs", str(jobs), "."], {}),
        "ruff": ([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", "."],
                 {"RAYON_NUM_THREADS": str(jobs)}),
    }


BASE_TOOL = "compile-lint base"  # another tree's compile-lint (--base-tree), interleaved with this one's


def run_round(root: str, jobs: int, samples: dict, tools: list[str], rotate: int,
              base_tree: Optional[str] = None) -> None:
    """One run of every tool on `root` with `jobs` processes, in rotated order."""
    config = os.path.join(root, "compile-lint.toml")
    commands = tool_commands(jobs, config)
    commands[BASE_TOOL] = commands["compile-lint"]
    order = tools[rotate % len(tools):] + tools[:rotate % len(tools)]
    env_base = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for name in order:
        command, extra = commands[name]
        env = {**env_base, **extra}
        if name == BASE_TOOL:
            # The other tree first on the path: its `compile_lint` package is the one imported.
            env["PYTHONPATH"] = os.path.abspath(base_tree or REPO) + os.pathsep + env_base["PYTHONPATH"]
        if name in ("compile-lint", BASE_TOOL):
            shutil.rmtree(os.path.join(root, ".compile-lint-cache"), ignore_errors=True)
            samples.setdefault((name + " cold", jobs), []).append(measure(command, root, env))
            samples.setdefault((name + " warm", jobs), []).append(measure(command, root, env))
        else:
            samples.setdefault((name, jobs), []).append(measure(command, root, env))


def machine() -> dict:
    """What the numbers were measured on."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(), "platform": platform.platform(),
    }


def versions() -> dict:
    """The version of each tool measured."""
    def version(python: str, module: str) -> str:
        if not os.path.exists(python):
            return "not measured"  # a peer whose venv was never made (not among --tools)
        code = f"import importlib.metadata as m; print(m.version('{module}'))"
        return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()
    return {
        "compile-lint": subprocess.run([sys.executable, "-m", "compile_lint", "--version"], capture_output=True,
                                       text=True, env={**os.environ, "PYTHONPATH": REPO}).stdout.strip(),
        "libcst": version(sys.executable, "libcst"),
        "TorchFix": version(_venv_python("torchfix"), "torchfix"),
        "TorchFix's libcst": version(_venv_python("torchfix"), "libcst"),
        "flake8": version(_venv_python("flake8"), "flake8"),
        "ruff": version(sys.executable, "ruff"),
    }


def table(samples: dict, lines: int, single: int, cores: int) -> str:
    """The results as a markdown table, ratios to compile-lint (cold) and to the libcst parse at one process count."""
    rows = ["| tool | processes | median s | median CPU s | runs | lines/s | peak MiB (one process) "
            "| x compile-lint cold | x libcst parse (wall) | x libcst parse (CPU) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for jobs in dict.fromkeys((single, cores)):
        if ("compile-lint cold", jobs) not in samples:
            continue
        reference = statistics.median(s[0] for s in samples[("compile-lint cold", jobs)])
        floor = samples.get(("libcst parse", jobs))
        floor_wall = statistics.median(s[0] for s in floor) if floor else None
        floor_cpu = statistics.median(s[3] for s in floor) if floor else None
        for (name, sample_jobs), runs in samples.items():
            if sample_jobs != jobs:
                continue
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[3] for r in runs)
            peak = max(r[1] for r in runs)
            versus_floor = f"{wall / floor_wall:.2f} | {cpu / floor_cpu:.2f}" if floor_wall else "- | -"
            rows.append(f"| {name} | {jobs} | {wall:.2f} | {cpu:.2f} | {len(runs)} | {lines / wall:,.0f} | {peak:.0f} "
                        f"| {wall / reference:.2f} | {versus_floor} |")
    return "\n".join(rows)


def targets(samples: dict, cores: int) -> list[str]:
    """The issue's targets, read from the samples with all cores."""
    def median(name: str, index: int) -> Optional[float]:
        runs = samples.get((name, cores))
        return statistics.median(r[index] for r in runs) if runs else None

    lines = []
    cold, warm, floor = median("compile-lint cold", 0), median("compile-lint warm", 0), median("libcst parse", 0)
    cold_cpu, floor_cpu = median("compile-lint cold", 3), median("libcst parse", 3)
    if cold and floor:
        lines.append(f"- cold, {cores} processes: {cold / floor:.2f}x the libcst parse by wall time, "
                     f"{cold_cpu / floor_cpu:.2f}x by CPU time (target 1.3x)")
    if cold and warm:
        lines.append(f"- warm: {warm / cold:.1%} of cold (target 5%)")
    return lines


def main() -> int:
    """Run the benchmark, print the table, write it with the machine's description to results/."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the table shows medians")
    parser.add_argument("--fraction", type=float, default=1.0, help="lint every 1/F-th file only (quick runs)")
    parser.add_argument("--scales", default="1,2,4", help="corpus copies for the linear-growth check")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the all-cores runs")
    parser.add_argument("--tools", default="compile-lint,libcst parse,ast.parse,TorchFix,flake8,ruff")
    parser.add_argument("--source", help="a directory where the pinned packages are unpacked (no download)")
    parser.add_argument("--slice", choices=("all", "modeling"), default="all",
                        help="all: transformers models/, timm, diffusers; modeling: transformers' modeling_*.py")
    parser.add_argument("--limit", type=int, help="at most this many files, spread over the slice")
    parser.add_argument("--server", nargs="?", const="transformers/models/longformer/modeling_longformer.py",
                        help="also measure the language server's latency on this corpus file")
    parser.add_argument("--no-single", action="store_true", help="skip the single-process runs")
    parser.add_argument("--base-tree", help="a directory holding another tree's compile_lint/ package (an earlier "
                        "commit): measured as 'compile-lint base', interleaved with this tree's, round by round")
    parser.add_argument("--single-tools", help="tools to run single-process (default: all of --tools)")
    parser.add_argument("--output", help="results file (default: results/<date>-<host>.md)")
    args = parser.parse_args()
    tools = [t.strip() for t in args.tools.split(",")]
    if args.base_tree:
        if not os.path.isdir(os.path.join(args.base_tree, "compile_lint")):
            parser.error(f"--base-tree {args.base_tree}: no compile_lint package there")
        tools.append(BASE_TOOL)
    for peer in ("TorchFix", "flake8"):
        if peer in tools:
            ensure_peer_venv(peer.lower())
    base, files = ensure_corpus(args.fraction, args.source, args.slice, args.limit)
    tag = f"{args.slice}-f{args.fraction:g}" + (f"-n{args.limit}" if args.limit else "")
    root, lines = build_tree(base, files, 1, tag)
    load_before = os.getloadavg()
    uptime_before = _uptime()
    started = time.time()
    samples: dict = {}
    process_counts = [args.jobs] if args.no_single else [1, args.jobs]
    single_tools = [t.strip() for t in args.single_tools.split(",")] if args.single_tools else tools
    for round_number in range(args.repeat):
        for jobs in process_counts:
            run_round(root, jobs, samples, single_tools if jobs == 1 else tools, round_number, args.base_tree)
        print(f"round {round_number + 1}/{args.repeat} done, load average {os.getloadavg()[0]:.1f}", flush=True)
    growth = []
    for scale in [int(s) for s in args.scales.split(",") if s.strip()]:
        scaled_root, scaled_lines = (root, lines) if scale == 1 else build_tree(base, files, scale, tag)
        scaled: dict = {}
        for round_number in range(max(1, args.repeat // 3) if scale > 1 else 0):
            run_round(scaled_root, args.jobs, scaled, ["compile-lint", "libcst parse"], round_number)
        if scale == 1:
            scaled = {key: value for key, value in samples.items() if key[1] == args.jobs}
        for name in ("compile-lint cold", "libcst parse"):
            runs = scaled.get((name, args.jobs), [])
            if runs:
                wall = statistics.median(r[0] for r in runs)
                growth.append((name, scale, scaled_lines, wall, wall / scaled_lines * 10_000))
        if scale > 1:
            shutil.rmtree(scaled_root, ignore_errors=True)
    load_after = os.getloadavg()
    uptime_after = _uptime()
    server = None
    if args.server:
        import server_latency

        server = server_latency.measure(os.path.join(base, args.server), 20)
    elapsed = time.time() - started

    single = 1 if not args.no_single else args.jobs
    report = [
        f"# compile-lint speed, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}",
        "",
        f"Command: `python benchmarks/speed.py {' '.join(sys.argv[1:])}`".rstrip(),
        "",
        f"Corpus: {len(files)} files, {lines:,} lines (transformers {PINNED['transformers']} models/, "
        f"timm {PINNED['timm']}, diffusers {PINNED['diffusers']}; slice {args.slice}, fraction {args.fraction:g}"
        + (f", {args.limit} files at most" if args.limit else "") + ").",
        "",
        "Machine: " + json.dumps(machine()),
        "",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; "
        f"after: {', '.join(f'{x:.1f}' for x in load_after)}; benchmark took {elapsed / 60:.1f} min.",
        "",
        f"`uptime` before: `{uptime_before}`; after: `{uptime_after}`.",
        "",
        "Versions: " + json.dumps(versions()),
        "",
        table(samples, lines, single, args.jobs),
        "",
        "Targets (issue 15):",
        "",
        *targets(samples, args.jobs),
        "",
        "Linear growth (all cores, cold): seconds per 10k lines",
        "",
        "| tool | scale | lines | median s | s per 10k lines |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {name} | {scale}x | {n:,} | {wall:.2f} | {per:.3f} |" for name, scale, n, wall, per in growth],
    ]
    if server is not None:
        report += ["", "Language server (benchmarks/server_latency.py): from a message to its diagnostics", "",
                   *server_latency.table(server)]
    text = "\n".join(report) + "\n"
    sys.stdout.write(text)
    os.makedirs(RESULTS, exist_ok=True)
    output = args.output or os.path.join(
        RESULTS, f"{time.strftime('%Y-%m-%d-%H%M', time.gmtime(started))}-{platform.node() or 'host'}.md")
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)
    raw = {f"{name}|{jobs}": runs for (name, jobs), runs in samples.items()}
    with open(os.path.splitext(output)[0] + ".json", "w", encoding="utf-8") as handle:
        json.dump({"lines": lines, "files": len(files), "samples": raw, "growth": growth, "server": server,
                   "load_before": load_before, "load_after": load_after}, handle, indent=1)
    sys.stderr.write(f"written to {output}\n")
    return 0


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "uptime unavailable"


if __name__ == "__main__":
    sys.exit(main())
