"""The model's state: cells of value sets that only grow, who read each, and the work left.

A cell is a place a value lives: a module's global, a class attribute, an instance
attribute, a function's local / parameter / return value in a context, a container's
elements. Evaluating a node (a module's code, or a function in a context) reads cells and
adds to cells; when a cell grows, every node that read it is evaluated again. Since value
sets only grow and are bounded (`values.join`), this reaches the least fixed point, in an
order that does not change the result.
"""

from __future__ import annotations

from collections import deque
from typing import Hashable, Iterable, Optional

from compile_lint.analysis.model.values import EMPTY, Node, join

Cell = Hashable


class Heap:
    """Cells, their readers and the worklist of nodes to (re-)evaluate."""

    def __init__(self) -> None:
        self.cells: dict[Cell, frozenset] = {}
        self.readers: dict[Cell, set[Node]] = {}
        self.pending: deque[Node] = deque()
        self.queued: set[Node] = set()
        self.current: Optional[Node] = None  # the node being evaluated: the reader of what is read

    def read(self, cell: Cell) -> frozenset:
        """The values of `cell`, noting the current node as its reader."""
        if self.current is not None:
            readers = self.readers.get(cell)
            if readers is None:
                readers = self.readers[cell] = set()
            readers.add(self.current)
        return self.cells.get(cell, EMPTY)

    def peek(self, cell: Cell) -> frozenset:
        """The values of `cell` without becoming its reader (for answers after the fixed point)."""
        return self.cells.get(cell, EMPTY)

    def add(self, cell: Cell, found: Iterable) -> bool:
        """Add `found` to `cell`; when it grows, queue its readers. Whether it grew."""
        old = self.cells.get(cell, EMPTY)
        if not found or (isinstance(found, frozenset) and found <= old):
            return False  # nothing new: the common case, without a join
        new = join(old, found)
        if len(new) == len(old) and new == old:
            return False
        self.cells[cell] = new
        for reader in self.readers.get(cell, ()):
            self.schedule(reader)
        return True

    def schedule(self, node: Node) -> None:
        """Queue `node` for evaluation (once, however often it is asked)."""
        if node not in self.queued:
            self.queued.add(node)
            self.pending.append(node)

    def next(self) -> Optional[Node]:
        """The next node to evaluate, or None when the fixed point is reached."""
        if not self.pending:
            return None
        node = self.pending.popleft()
        self.queued.discard(node)
        return node
