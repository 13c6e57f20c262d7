"""`compile-lint --fix --verify` on a project: every fix proven, each target run once for all of them.

Cost: each `[tool.compile-lint.verify]` target runs once (original and fixed side by side,
two processes) with the fixes of every file applied together. Only a target that fails
runs again, to bisect its fixed files: halves that pass keep their fixes, a half that fails
is split again, down to the single files that make it fail, whose fixes are rolled back
(about 2 log2(n) more runs for one bad file among n, 2n - 1 at worst). A target that
passed with a file rolled back elsewhere runs once more without it. So a project whose
fixes all pass costs one run per target, however many files were fixed.

The original code is the same in every run of a target, so only its first run runs it: later
runs (a bisect, a run without rolled-back files) run the fixed side alone and compare with it.
A target whose original fails the same way as the fixed code (it raises, or does not compile,
with the same error: a custom op without a fake kernel) is neutral: it holds nothing against
the fixes and proves nothing for them, so it starts no bisect.

A file's fixes are written only if every target that imports it passes with all the fixes
kept (neutral ones included), and one of them shows fewer graph breaks + recompiles in that
file (or none at all, or fewer overall where the compiler placed the change in no fixed
file). A bisect prints a line per run, so a long one is never silent.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from compile_lint.verifier.fixcheck import (
    FIX_TIMEOUT_S,
    FixVerdict,
    check_target,
    judge,
    problems,
    problems_in,
    resolve_targets,
    shown,
)
from compile_lint.verifier.isolation import kill_workers, run_in_parallel
from compile_lint.verifier.scratch import owned_directory
from compile_lint.verifier.targets import TargetError, TargetSpec

Progress = Callable[[str], None]


class VerificationStopped(Exception):
    """The verification ran out of its time (`--verify-timeout`): what was proven so far is kept."""


@dataclass
class TargetState:
    """What one target has shown: the fixed files it may import (exact once a run has said),
    and the set of them it last passed with, that run and its verdict; the original side of
    its first run, which later runs reuse."""

    spec: TargetSpec
    covered: frozenset
    passed: frozenset = frozenset()
    result: Optional[dict] = None
    verdict: Optional[FixVerdict] = None
    original: Optional[dict] = None
    ran: bool = False  # a run has finished: `covered` is what it showed, no longer every fixed file

    def learn(self, trial: frozenset, result: Optional[dict]) -> Optional[FixVerdict]:
        """Take in a run with the fixes of `trial`: which of them the target imports, and
        whether it passed (then it is the new passing set); the verdict, None when it imports none."""
        self.ran = True
        if result is None:
            self.covered -= trial
            return None
        if "covered" in result:  # else it failed before its imports could say
            self.covered -= trial - frozenset(result["covered"])
        if self.original is None:
            self.original = result.get("original")
        verdict = judge(result)
        if verdict.accepted:
            self.passed, self.result, self.verdict = trial & self.covered, result, verdict
        return verdict

    def forget(self) -> None:
        """Nothing has passed yet (a set that passed lost a file)."""
        self.passed, self.result, self.verdict = frozenset(), None, None


@dataclass
class ProjectCheck:
    """Runs targets on sets of fixed files and keeps the verdicts; `runs` counts target runs,
    `reused` those that reused the original side of an earlier run."""

    copies: dict[str, str]  # original file -> its fixed copy
    scratch: str
    timeout_s: Optional[float]
    backend: str
    device: Optional[str]
    mode: str
    progress: Progress
    bench: Optional[str] = None  # a backend: time the compiled original and fixed code too
    rejected: dict[str, str] = field(default_factory=dict)  # file -> why its fixes are rolled back
    runs: int = 0
    reused: int = 0
    # Targets may run on threads of their own (`verify_fixes(parallel=)`): counters, `rejected`
    # and progress lines are shared.
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: threading.Event = field(default_factory=threading.Event)  # interrupted: start no more runs
    stop_reason: str = ""  # why `stopped` is set, when a time limit set it

    def kept(self, files: frozenset) -> frozenset:
        """`files` less those rolled back so far."""
        with self.lock:
            return files - frozenset(self.rejected)

    def reject(self, path: str, reason: str) -> None:
        with self.lock:
            self.rejected.setdefault(path, reason)

    def say(self, line: str) -> None:
        with self.lock:
            self.progress(line)

    def run(self, state: TargetState, files: frozenset, bisecting: Sequence[str] = ()) -> Optional[FixVerdict]:
        """One side-by-side run of `state`'s target with the fixes of `files`; its verdict.
        A bisect's run (`bisecting`: its suspects) says so before and after: a long bisect is never silent."""
        if self.stopped.is_set():
            raise VerificationStopped(self.stop_reason or "stopped")
        with self.lock:
            self.runs += 1
            number = self.runs
            self.reused += state.original is not None
        if bisecting:
            names = ", ".join(os.path.basename(path) for path in bisecting[:4])
            names += ", ..." if len(bisecting) > 4 else ""
            self.say(f"    bisect run {number}: {shown(state.spec)} with {len(bisecting)} suspect(s) "
                     f"({names}) beside {len(files) - len(bisecting)} passing file(s) ...")
        started = time.monotonic()
        directory = os.path.join(self.scratch, f"run-{number}")
        os.mkdir(directory)
        result = check_target(state.spec, {path: self.copies[path] for path in sorted(files)}, directory,
                              self.timeout_s, self.backend, self.device, self.mode, state.original, self.bench)
        if self.stopped.is_set():  # its workers were killed: the run proves nothing either way
            raise VerificationStopped(self.stop_reason or "stopped")
        verdict = state.learn(files, result)
        if bisecting:
            outcome = ("imports none of them" if verdict is None else "passes" if verdict.accepted
                       else "fails: " + verdict.reason.split(": ", 1)[-1][:160])
            self.say(f"      {outcome} ({time.monotonic() - started:.0f} s)")
        return verdict

    def settle(self, state: TargetState, files: frozenset) -> None:
        """Run `state`'s target with `files` and, if it fails, bisect them: `state` ends passing
        with the largest set found, and the files that made it fail are in `rejected`."""
        state.forget()
        if not files:
            return
        verdict = self.run(state, files)
        if verdict is None or verdict.accepted:
            return
        suspects = sorted(files & state.covered)
        if len(suspects) > 1:
            self.say(f"  {shown(state.spec)}: fails with {len(suspects)} fixed files together; bisecting "
                     f"({verdict.reason.split(': ', 1)[-1][:160]})")
        self._split(state, suspects, frozenset(files), verdict)

    def _split(self, state: TargetState, suspects: list[str], failing: frozenset, failure: FixVerdict) -> None:
        """`state.passed` passes, `failing` (`state.passed` + `suspects`) fails with `failure`:
        keep the suspects that pass beside it, reject the ones that make it fail."""
        if len(suspects) == 1:
            self.reject(suspects[0], failure.reason)
            return
        middle = len(suspects) // 2
        for half in (suspects[:middle], suspects[middle:]):
            half = [path for path in half if path in state.covered]
            if not half:
                continue
            trial = state.passed | frozenset(half)
            # The first half passed: the second beside it is the set already seen failing.
            verdict = failure if trial == failing else self.run(state, trial, bisecting=half)
            if verdict is not None and not verdict.accepted:
                self._split(state, [path for path in half if path in state.covered], trial, verdict)


def _credited(state: TargetState, path: str, copies: dict[str, str]) -> bool:
    """Whether `state`'s passing run shows `path`'s fixes helping: fewer breaks + recompiles
    in that file, none at all, or fewer overall that the compiler placed in no fixed file.
    A neutral target (the original fails as the fixed code does) shows nothing."""
    if state.result is None or (state.verdict is not None and state.verdict.neutral):
        return False
    before, after = state.result["before"], state.result["after"]
    if problems(after) == 0 or before.get("compile_error"):
        return True

    def fewer_in(original: str) -> bool:
        return problems_in(after, os.path.abspath(copies[original])) < problems_in(before, original)

    if fewer_in(path):
        return True
    return problems(after) < problems(before) and not any(fewer_in(other) for other in state.passed)


def _reasons(states: Sequence[TargetState]) -> str:
    """The verdicts of the runs these targets passed with, joined."""
    return "; ".join(state.verdict.reason for state in states if state.verdict is not None)


def _unproven(states: Sequence[TargetState], copies: dict[str, str], rejected: dict[str, str]) -> dict[str, str]:
    """The files still kept on which no target that imports them shows an improvement, and why."""
    found = {}
    for path in copies:
        if path in rejected:
            continue
        covering = [state for state in states if path in state.passed]
        if not covering or any(_credited(state, path, copies) for state in covering):
            continue
        if all(state.verdict is not None and state.verdict.neutral for state in covering):
            found[path] = ("not proven: every target that imports it fails the same way with and without "
                           "the fixes: " + _reasons(covering))
        else:
            found[path] = "check failed: fewer graph breaks + recompiles on some target: " + _reasons(covering)
    return found


def verify_fixes(fixed: dict[str, str], targets: Sequence[str], root: str,
                 timeout_s: Optional[float] = FIX_TIMEOUT_S, backend: str = "eager",
                 device: Optional[str] = None, mode: str = "factory",
                 progress: Progress = lambda line: None, parallel: int = 1,
                 total_timeout_s: Optional[float] = None, bench: Optional[str] = None) -> dict[str, FixVerdict]:
    """The verdict for each fixed file (absolute path -> fixed text), every target run with
    all the fixes together first; `progress` gets a line per target run. `parallel` targets
    run at once (each run is two processes); with one, in the order given.

    Stopped before the end, by `total_timeout_s` (the runs in flight are killed) or by Ctrl-C /
    SIGTERM (the `KeyboardInterrupt` carries them as `partial_verdicts`), the files proven so
    far keep their fixes: see `_stopped_verdicts`."""
    try:
        specs = resolve_targets(targets, root)
    except TargetError as error:
        return {path: FixVerdict(False, str(error)) for path in fixed}
    with owned_directory("compile-lint-fixcheck-") as scratch:
        copies = {}
        for index, (path, text) in enumerate(sorted(fixed.items())):
            directory = os.path.join(scratch, f"fixed-{index}")
            os.mkdir(directory)
            copies[path] = os.path.join(directory, os.path.basename(path))
            with open(copies[path], "w", encoding="utf-8") as handle:
                handle.write(text)
        check = ProjectCheck(copies, scratch, timeout_s, backend, device, mode, progress, bench)
        states = [TargetState(spec, frozenset(copies)) for spec in specs]

        def first(numbered: tuple[int, TargetState]) -> None:
            number, state = numbered
            check.say(f"verifying fixes [{number}/{len(states)}] {shown(state.spec)} ...")
            check.settle(state, check.kept(frozenset(copies)))
            check.say(f"  {_state_line(state, check)}")

        timer = _deadline(check, total_timeout_s)
        try:
            run_in_parallel(first, list(enumerate(states, 1)), parallel, check.stopped.set)
            _agree(states, check, parallel)
            unproven = _unproven(states, copies, check.rejected)
            while unproven:
                check.rejected.update(unproven)
                _agree(states, check, parallel)
                unproven = _unproven(states, copies, check.rejected)
        except VerificationStopped as stop:
            return _stopped_verdicts(fixed, states, check, str(stop), progress)
        except KeyboardInterrupt as interrupt:
            signum = getattr(interrupt, "signum", None)
            why = f"stopped by {signal.Signals(signum).name}" if signum else "interrupted"
            interrupt.partial_verdicts = _stopped_verdicts(fixed, states, check, why,  # type: ignore[attr-defined]
                                                           progress)
            raise
        finally:
            if timer is not None:
                timer.cancel()
    dropped = f", {len(check.rejected)} rolled back" if check.rejected else ""
    reused = f" ({check.reused} of them ran the fixed code alone)" if check.reused else ""
    progress(f"verified {len(fixed)} fixed file(s) on {len(states)} target(s) in {check.runs} target run(s)"
             f"{reused}: {len(fixed) - len(check.rejected)} kept{dropped}")
    return _verdicts(fixed, states, check.rejected)


def _deadline(check: ProjectCheck, seconds: Optional[float]) -> Optional[threading.Timer]:
    """A timer that, after `seconds`, stops `check`: no run starts, and the runs in flight are killed."""
    if seconds is None:
        return None

    def expire() -> None:
        check.stop_reason = f"stopped after --verify-timeout {seconds:g} s"
        check.stopped.set()
        kill_workers()

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def _stopped_verdicts(fixed: dict[str, str], states: Sequence[TargetState], check: ProjectCheck, why: str,
                      progress: Progress) -> dict[str, FixVerdict]:
    """The verdicts when the verification stops early: a file keeps its fixes when every target
    that ran and imports it passed with exactly the fixes kept, and one of them shows them
    helping; every other file is left as it was. Targets that never ran prove nothing either
    way (they may import a kept file: the line printed names them)."""
    copies = check.copies
    ran = [state for state in states if state.ran]
    verdicts = {}
    for path in fixed:
        if path in check.rejected:
            verdicts[path] = FixVerdict(False, check.rejected[path])
            continue
        covering = [state for state in ran if path in state.covered]
        settled = all(path in state.passed and check.kept(state.covered) == state.passed for state in covering)
        credited = [state for state in covering if _credited(state, path, copies)]
        if covering and settled and credited:
            verdicts[path] = FixVerdict(True, f"{why}: verified before it: " + _reasons(credited), improved=True)
        else:
            verdicts[path] = FixVerdict(False, f"not verified: {why} before every target that imports it had "
                                               "passed with its fixes")
    kept = sorted(os.path.basename(path) for path, verdict in verdicts.items() if verdict.accepted)
    not_run = [shown(state.spec) for state in states if not state.ran]
    progress(f"verification {why}: keeping the fixes of {len(kept)} of {len(fixed)} fixed file(s) verified so far"
             + (f" ({', '.join(kept[:6])}{', ...' if len(kept) > 6 else ''})" if kept else "")
             + (f"; {len(not_run)} target(s) never ran ({', '.join(not_run[:4])}"
                f"{', ...' if len(not_run) > 4 else ''})" if not_run else ""))
    return verdicts


def _agree(states: Sequence[TargetState], check: ProjectCheck, parallel: int = 1) -> None:
    """Run again each target that passed with a file since rolled back, without it, until
    every target has passed with exactly the fixes kept of the files it imports."""

    def again(state: TargetState) -> None:
        live = check.kept(state.covered)
        if not live:
            state.forget()
            return
        check.say(f"verifying fixes again without the rolled-back files: {shown(state.spec)} ...")
        check.settle(state, live)

    while True:
        stale = [state for state in states if check.kept(state.covered) != state.passed]
        if not stale:
            return
        run_in_parallel(again, stale, parallel, check.stopped.set)


def _state_line(state: TargetState, check: ProjectCheck) -> str:
    if not state.covered:
        return f"{shown(state.spec)}: imports none of the fixed files"
    dropped = ", ".join(sorted(os.path.basename(path) for path in state.covered - check.kept(state.covered)))
    if not state.passed:
        return f"{shown(state.spec)}: rolled back: {dropped}"
    kept = f"passes with {len(state.passed)} of {len(state.covered)} fixed file(s)"
    if state.verdict is not None and state.verdict.neutral:
        kept = (f"neutral with {len(state.passed)} of {len(state.covered)} fixed file(s): "
                f"{state.verdict.reason.split(': ', 1)[-1][:200]}")
    return f"{shown(state.spec)}: {kept}" + (f"; rolled back: {dropped}" if dropped else "")


def _verdicts(fixed: dict[str, str], states: Sequence[TargetState], rejected: dict[str, str]) -> dict[str, FixVerdict]:
    verdicts = {}
    for path in fixed:
        if path in rejected:
            verdicts[path] = FixVerdict(False, rejected[path])
            continue
        covering = [state for state in states if path in state.passed]
        if not covering:
            verdicts[path] = FixVerdict(True, f"{path}: no verify target covers this file; fix applied unverified",
                                        checked=False)
        else:
            verdicts[path] = FixVerdict(True, _reasons(covering), improved=True)
    return verdicts


class AcceptAll:
    """A callback for engine.fixing.fix_files_together (the pipeline's Fixing.accept_all): for each
    file, None to write its fixes, else why they were rolled back. `jobs` processes at most:
    jobs // 2 targets at once (two processes each); one at a time, in order, without it.

    Ctrl-C or SIGTERM during the verification does not lose what it proved: the call answers
    with the files verified so far, and keeps the interruption in `interrupted` for the caller
    to raise once they are written. `total_timeout_s` stops it the same way, with no interruption.
    `bench` (a backend, "inductor"): a fix whose compiled code runs slower than the compiled
    original is rolled back too."""

    def __init__(self, targets: Sequence[str], root: str, mode: str = "factory",
                 progress: Progress = lambda line: None, jobs: Optional[int] = None,
                 total_timeout_s: Optional[float] = None, bench: Optional[str] = None) -> None:
        self.targets, self.root, self.mode, self.progress = targets, root, mode, progress
        self.parallel = max(1, jobs // 2) if jobs else 1
        self.total_timeout_s, self.bench = total_timeout_s, bench
        self.interrupted: Optional[BaseException] = None

    def __call__(self, proposals: dict[str, tuple[str, str]]) -> dict[str, Optional[str]]:
        absolute = {os.path.abspath(path): path for path in proposals}
        try:
            verdicts = verify_fixes({os.path.abspath(path): fixed for path, (_, fixed) in proposals.items()},
                                    self.targets, self.root, mode=self.mode, progress=self.progress,
                                    parallel=self.parallel, total_timeout_s=self.total_timeout_s,
                                    bench=self.bench)
        except KeyboardInterrupt as interrupt:
            partial = getattr(interrupt, "partial_verdicts", None)
            if partial is None:
                raise
            self.interrupted, verdicts = interrupt, partial
        return {path: None if verdicts[key].accepted else
                f"{path}: fix rolled back, file left unchanged: {verdicts[key].reason}"
                for key, path in absolute.items()}


def accept_all_hook(targets: Sequence[str], root: str, mode: str = "factory",
                    progress: Progress = lambda line: None, jobs: Optional[int] = None,
                    total_timeout_s: Optional[float] = None, bench: Optional[str] = None) -> AcceptAll:
    """The pipeline's `Fixing.accept_all` for `--fix --verify` (see `AcceptAll`)."""
    return AcceptAll(targets, root, mode, progress, jobs, total_timeout_s, bench)
