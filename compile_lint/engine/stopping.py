"""Stopping a run: SIGTERM and SIGHUP handled as Ctrl-C is, and how far the run had got.

A run stopped by a signal unwinds as a KeyboardInterrupt (`Terminated` for SIGTERM and
SIGHUP), so every `finally` on the way cleans up: the pool kills its workers
(engine/pool.py), the verifier its targets' processes. On the way out each pool adds what
it had done to the interrupt (`record_progress`), and the CLI prints it in its one line.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator, Optional

# SIGHUP does not exist on Windows.
TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The tool received SIGTERM or SIGHUP: a request to stop, handled as Ctrl-C is (a
    KeyboardInterrupt, so no `except Exception` on the way swallows it, and everything that
    cleans up after Ctrl-C cleans up after it); the CLI exits with `exit_status`."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """SIGTERM, SIGHUP."""
        return signal.Signals(self.signum).name

    @property
    def exit_status(self) -> int:
        """128 + the signal: what a shell reports for a process that signal ended (143 for SIGTERM)."""
        return 128 + self.signum


@contextlib.contextmanager
def stop_on_termination(on_signal: Callable[[], None] = lambda: None) -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP stop it as Ctrl-C does: `on_signal()` runs at
    once (to kill processes the block started), then `Terminated` unwinds the block. A second
    signal during that cleanup only calls `on_signal()` again, so the cleanup finishes.
    Outside the main thread (where Python runs signal handlers) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        on_signal()
        if not received:
            received.append(signum)
            raise Terminated(signum)

    previous = {signum: signal.signal(signum, handler) for signum in TERMINATING_SIGNALS}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


def record_progress(stop: BaseException, phase: Optional[str], done: int, total: int) -> None:
    """Add `done` of `total` files to what the stopped run had done; `phase` ("Linting") names the
    step it was in (None: keep the one a pool set)."""
    done_before, total_before, phase_before = getattr(stop, "files_progress", (0, 0, None))
    stop.files_progress = (done_before + done, total_before + total, phase or phase_before)  # type: ignore[attr-defined]


def progress_note(stop: BaseException) -> Optional[str]:
    """"stopped while linting, 12 of 400 files done", or None when no pool had started."""
    done, total, phase = getattr(stop, "files_progress", (0, 0, None))
    if phase is None:
        return None
    return f"stopped while {phase.lower()}, {done} of {total} files done"
