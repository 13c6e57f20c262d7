"""Threading primitives Dynamo cannot trace."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Rule
from compile_lint.rules.support.bindings import made_by

THREAD_PRIMITIVES = frozenset(
    {
        "threading.Lock", "threading.RLock", "threading.Condition", "threading.Semaphore",
        "threading.BoundedSemaphore", "threading.Event", "threading.Barrier",
        "multiprocessing.Lock", "multiprocessing.RLock", "_thread.allocate_lock",
    }
)


def is_thread_primitive(rule: Rule, expr: cst.BaseExpression) -> bool:
    return any(maker in THREAD_PRIMITIVES for maker in made_by(rule.context, expr))

