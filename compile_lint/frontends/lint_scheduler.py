"""The language server's lint scheduling: the newest version of each document, linted on one worker thread."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.engine.api import LintCancelled
from compile_lint.settings.config import Config

# Edits closer together than this are one burst (a paste, an undo, a key held down, a
# client's own batching): lint once the burst pauses this long. Typing at a person's pace
# (60 ms or more between keystrokes) is linted keystroke by keystroke, each version as it
# comes: a lint whose text changed meanwhile is cancelled, and the last keystroke's
# findings come one lint after it, not a debounce plus a lint.
DEBOUNCE_SECONDS = 0.03
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """One version of one document, as it is to be linted."""

    uri: str
    path: str
    text: str
    version: Optional[int]
    config: Config


@dataclass
class _Job:
    snapshot: Snapshot
    due: float
    cancel: threading.Event = field(default_factory=threading.Event)


class LintScheduler:
    """Lints the newest version of each document on one worker thread.

    `submit` after a pause of `debounce` seconds since the document's last edit lints at
    once; during typing it waits until the edits pause that long. A newer version
    replaces a waiting one and cancels a running one (the lint stops at its next
    checkpoint). `lint(snapshot, cancelled)` runs on the worker; `deliver(snapshot,
    findings)` is called there with each lint that finished uncancelled.
    """

    def __init__(
        self,
        lint: Callable[[Snapshot, Callable[[], bool]], list[Diagnostic]],
        deliver: Callable[[Snapshot, list[Diagnostic]], None],
        debounce: float = DEBOUNCE_SECONDS,
    ) -> None:
        self.lint, self.deliver, self.debounce = lint, deliver, debounce
        self.pending: dict[str, _Job] = {}
        self.running: Optional[_Job] = None
        self.last_edit: dict[str, float] = {}
        self.closed = False
        self.condition = threading.Condition()
        self.thread = threading.Thread(target=self._work, name="compile-lint-linter", daemon=True)
        self.thread.start()

    def submit(self, snapshot: Snapshot, edit: bool = True) -> None:
        """Lint `snapshot` (an edit is debounced while typing; opening or saving is not)."""
        now = time.monotonic()
        with self.condition:
            last = self.last_edit.get(snapshot.uri)
            typing = edit and last is not None and now - last < self.debounce
            if edit:
                self.last_edit[snapshot.uri] = now
            self.pending[snapshot.uri] = _Job(snapshot, now + self.debounce if typing else now)
            running = self.running
            if running is not None and running.snapshot.uri == snapshot.uri:
                running.cancel.set()
            self.condition.notify()

    def forget(self, uri: str) -> None:
        """Drop a closed document: nothing pending, a running lint cancelled."""
        with self.condition:
            self.pending.pop(uri, None)
            self.last_edit.pop(uri, None)
            if self.running is not None and self.running.snapshot.uri == uri:
                self.running.cancel.set()

    def close(self) -> None:
        """Stop the worker after its current lint."""
        with self.condition:
            self.closed = True
            if self.running is not None:
                self.running.cancel.set()
            self.condition.notify()

    def _next(self) -> Optional[_Job]:
        with self.condition:
            while True:
                if self.closed:
                    return None
                if self.pending:
                    job = min(self.pending.values(), key=lambda item: item.due)
                    wait = job.due - time.monotonic()
                    if wait <= 0:
                        del self.pending[job.snapshot.uri]
                        self.running = job
                        return job
                    self.condition.wait(wait)
                else:
                    self.condition.wait()

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            findings: Optional[list[Diagnostic]] = None
            try:
                findings = self.lint(job.snapshot, job.cancel.is_set)
            except LintCancelled:
                pass
            except Exception:  # noqa: BLE001 - one bad lint must not stop the server
                logger.exception("compile-lint: linting %s failed", job.snapshot.path)
            with self.condition:
                self.running = None
            if findings is not None and not job.cancel.is_set():
                try:
                    self.deliver(job.snapshot, findings)
                except Exception:  # noqa: BLE001
                    logger.exception("compile-lint: publishing %s failed", job.snapshot.path)
