"""`--watch`: lint, then lint again whenever a Python file or the config changes.

File events come from `watchfiles` (an optional extra: `pip install "compile-lint[watch]"`),
which waits on the operating system's notifications and batches a burst of changes into
one re-run. Ctrl-C ends the watch.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, Optional, Sequence

WATCHED_SUFFIXES = (".py", ".pyi", ".toml")
INSTALL_HINT = '--watch needs watchfiles: pip install "compile-lint[watch]" (or pip install watchfiles)'


def missing_dependency() -> Optional[str]:
    """Why --watch cannot run here, or None."""
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        return INSTALL_HINT
    return None


def _relevant(change: object, path: str) -> bool:
    return path.endswith(WATCHED_SUFFIXES)


def watch(run: Callable[[], int], paths: Sequence[str]) -> int:
    """Call `run` now and after every batch of changes under `paths`; return 0 on Ctrl-C."""
    import watchfiles

    try:
        run()
        _flush()
        existing = [path for path in paths if os.path.exists(path)]
        for changes in watchfiles.watch(*existing, watch_filter=_relevant, raise_interrupt=False):
            changed = sorted({os.path.relpath(path) for _, path in changes})
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] changed: {shown}; linting again\n")
            run()
            _flush()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends, wherever it lands
    return 0


def _flush() -> None:
    # A pipe is block-buffered: each run's report must reach the reader now, not at exit.
    sys.stdout.flush()
    sys.stderr.flush()
