"""The language server's project answers, built in a child process so that no lint ever waits for one.

What a project's entry points reach in a file costs the whole project's program model: in a
package of thousands of files, minutes. The server lints each version of a document with
the answer it has (engine/buffer_reach.py) and asks for a new one here: a child process
(niced, so that it only takes what the server's lints leave) builds the answers for every
open document at once, their unsaved texts in place of the files on disk, exactly as a
fresh `compile-lint` run over the saved files would. A build asked for while another is under
way starts when that one ends (whose answers, for older texts, the server moves to the new lines).

Run as `python -m compile_lint.frontends.project_builds`: a pickled `BuildRequest` on stdin,
the pickled answers on stdout.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from compile_lint.analysis.project.reach import FileReach, StoredReach
from compile_lint.settings.config import Config

logger = logging.getLogger(__name__)
# How much lower than the server's the child's scheduling priority is.
CHILD_NICENESS = 5
# How often the child checks that the server that started it is still there.
PARENT_CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class BuildRequest:
    """The open documents to answer for: (path, text, config) each, the text as the editor has it."""

    documents: tuple[tuple[str, str, Config], ...]


# path -> the project's answer for it (None: linted without the project's reach, an `entry-points`
# target that names nothing), with the project's traced set that `FileReach.reaches` asks.
Answers = dict[str, Optional[FileReach]]


def build_answers(request: BuildRequest) -> Answers:
    """What each document's project reaches in it, the documents' texts in place of the files on disk."""
    from compile_lint.engine.project import ProjectIndex

    sources = {os.path.abspath(path): text for path, text, _ in request.documents if not _saved(path, text)}
    index = ProjectIndex()
    answers: Answers = {}
    for path, _, config in request.documents:
        reach = index.reach(config, path, sources=sources or None)
        if reach is None or reach.project is None:
            answers[path] = reach
            continue
        # With the answers for the library files its calls reach (what is linted inside them).
        files = {os.path.abspath(path), *(function.path for call in reach.library_calls for function in call.reached)}
        answers[path] = StoredReach(frozenset(reach.project.reached), {
            file: dataclasses.replace(reach.project.for_file(file), project=None) for file in files}).for_file(path)
    return answers


def _saved(path: str, text: str) -> bool:
    """Whether `text` is what the file at `path` holds (then the answers kept on disk serve)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read() == text
    except (OSError, UnicodeDecodeError):
        return False


class ProjectBuilds:
    """At most one build at a time, each for the open documents' texts when it starts.

    `schedule(delay)` builds after `delay` seconds (replacing a build not started yet); one
    due while another runs starts when it ends (its answers, for older texts, are still
    used: the host moves them to the new lines). `prepare()` (called when a build starts,
    on a timer thread) says what to build, or None for nothing; `done(request, answers)` is
    called on the thread that waited for the child, with each build that finished.
    """

    def __init__(self, prepare: Callable[[], Optional[BuildRequest]],
                 done: Callable[[BuildRequest, Answers], None]) -> None:
        self.prepare, self.done = prepare, done
        self.lock = threading.Lock()
        self.timer: Optional[threading.Timer] = None
        self.child: Optional[subprocess.Popen] = None
        self.again = False  # a build fell due while one ran
        self.closed = False

    def schedule(self, delay: float, then: Optional[Callable[[], None]] = None) -> None:
        """Build after `delay` seconds (or call `then` then, which may schedule a build)."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
            if self.closed:
                return
            self.timer = threading.Timer(delay, self._due, (then,))
            self.timer.daemon = True
            self.timer.start()

    def close(self) -> None:
        """End any build; schedule nothing more."""
        with self.lock:
            self.closed = True
            if self.timer is not None:
                self.timer.cancel()
            if self.child is not None and self.child.poll() is None:
                self.child.kill()

    def _due(self, then: Optional[Callable[[], None]]) -> None:
        if then is not None:
            then()
            return
        with self.lock:
            if self.closed:
                return
            if self.child is not None:
                self.again = True
                return
            try:
                request = self.prepare()
            except Exception:  # noqa: BLE001 - a failed build must not stop the server
                logger.exception("compile-lint: preparing the project's answers failed")
                return
            if request is None:
                return
            child = self.child = subprocess.Popen(
                [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
        output, errors = child.communicate(pickle.dumps(request))
        with self.lock:
            self.child = None
            again, self.again = self.again, False
            if self.closed:
                return
        if child.returncode != 0:
            logger.error("compile-lint: building the project's answers failed: %s",
                         errors.decode("utf-8", "replace")[-2000:])
        else:
            try:
                self.done(request, pickle.loads(output))
            except Exception:  # noqa: BLE001
                logger.exception("compile-lint: using the project's answers failed")
        if again:
            self.schedule(0)


def _end_with(parent: int) -> None:
    """End this process once `parent` is gone (a server killed outright cannot end its build)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def main() -> int:
    """The child: read a request on stdin, write its answers on stdout."""
    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
    try:
        os.nice(CHILD_NICENESS)
    except OSError:
        pass
    request = pickle.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(pickle.dumps(build_answers(request)))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
