"""Class hierarchies over file summaries: the method resolution order, where a method is,
whether a class is an nn.Module.

The order is Python's own (C3 linearisation) over the bases the caller can resolve:
`class D(B, C)` with `B(A)` and `C(A)` looks in D, B, C, then A, as Python does. A base
that does not resolve (an installed class the caller does not read, a name built at run
time) is left out; a base met again while its own order is being worked out (a class
named after the one it derives from, `class Linear(Linear)`) too. When the bases that
resolve admit no C3 order (Python would refuse the class; here mostly because a base in
between was left out), the order is depth first, left to right, each class once.

Both the symbol index (classes of any file it reads) and the call graph (classes of the
project's files) ask it, each with its own way of resolving a base's spelling.
"""

from __future__ import annotations

from typing import Callable, Optional

from compile_lint.analysis.project.summary import ClassInfo

ClassKey = tuple[str, str]  # (file, class qualname)
_MAX_DEPTH = 30


class ClassResolver:
    """Orders and lookups over classes, memoised for the resolver's life (one question, or one call graph).

    `class_info(key)` gives a class's summary; `bases(key, spelling)` the classes a base of
    `key`, spelled `spelling` in its file, may name (the first is the one it does);
    `qualify(path, spelling)` a spelling with the file's imports applied.
    """

    def __init__(self, class_info: Callable[[ClassKey], Optional[ClassInfo]],
                 bases: Callable[[ClassKey, str], list[ClassKey]],
                 qualify: Callable[[str, str], str]) -> None:
        self.class_info = class_info
        self.bases = bases
        self.qualify = qualify
        self._orders: dict[ClassKey, list[ClassKey]] = {}
        self._module_classes: dict[tuple[ClassKey, frozenset[str], str], bool] = {}

    # ----- the order -----
    def mro(self, key: ClassKey) -> list[ClassKey]:
        """The class, then its bases that resolve, in Python's method resolution order."""
        return self._order(key, [])[0]

    def _order(self, key: ClassKey, working: list[ClassKey]) -> tuple[list[ClassKey], bool]:
        """(the order of `key`, whether a base was left out because its order was being worked out)."""
        known = self._orders.get(key)
        if known is not None:
            return known, False
        info = self.class_info(key)
        if info is None or len(working) > _MAX_DEPTH:
            return [key], False
        working.append(key)
        cut = False
        direct: list[ClassKey] = []
        orders: list[list[ClassKey]] = []
        for spelling in info.bases:
            found = self.bases(key, spelling)
            if not found:
                continue
            base = found[0]
            if base in working:
                cut = True
                continue
            if base in direct:
                continue
            order, base_cut = self._order(base, working)
            cut = cut or base_cut
            direct.append(base)
            orders.append(order)
        working.pop()
        merged = _c3_merge([*orders, direct])
        if merged is None:
            merged = []
            for order in orders:
                merged.extend(item for item in order if item not in merged and item != key)
        result = [key, *merged]
        if not cut:  # an order worked out with a base left out holds only for this question
            self._orders[key] = result
        return result, cut

    # ----- lookups -----
    def method(self, key: ClassKey, name: str, after_self: bool = False) -> Optional[tuple[ClassKey, str]]:
        """(the class, the method's qualname) of the first class in `key`'s order (after `key` itself,
        for `super()`) whose body defines `name`."""
        order = self.mro(key)
        for cls in order[1:] if after_self else order:
            info = self.class_info(cls)
            if info is not None and name in info.methods:
                return cls, info.methods[name]
        return None

    def is_module_class(self, key: ClassKey, base_names: frozenset[str], prefix: str) -> bool:
        """Whether the class derives from an nn.Module: a base qualified under `prefix` (`torch.nn.`)
        or named one of `base_names` (`Module`, `PreTrainedModel`), here or in a base that resolves."""
        return self._module_class(key, base_names, prefix, [])[0]

    def _module_class(self, key: ClassKey, base_names: frozenset[str], prefix: str,
                      working: list[ClassKey]) -> tuple[bool, bool]:
        memo = (key, base_names, prefix)
        known = self._module_classes.get(memo)
        if known is not None:
            return known, False
        info = self.class_info(key)
        if info is None or key in working or len(working) > _MAX_DEPTH:
            return False, key in working
        working.append(key)
        result, cut = False, False
        for base in info.bases:
            if self.qualify(key[0], base).startswith(prefix) or base.rsplit(".", 1)[-1] in base_names:
                result = True
                break
            for found in self.bases(key, base):
                derived, base_cut = self._module_class(found, base_names, prefix, working)
                cut = cut or base_cut
                if derived:
                    result = True
                    break
            if result:
                break
        working.pop()
        if result or not cut:
            self._module_classes[memo] = result
        return result, cut and not result


def _c3_merge(sequences: list[list[ClassKey]]) -> Optional[list[ClassKey]]:
    """C3's merge: repeatedly take the first head that is in no other sequence's tail; None when none is."""
    pending = [list(sequence) for sequence in sequences if sequence]
    merged: list[ClassKey] = []
    while pending:
        for sequence in pending:
            head = sequence[0]
            if not any(head in other[1:] for other in pending):
                break
        else:
            return None
        merged.append(head)
        pending = [[item for item in sequence if item != head] for sequence in pending]
        pending = [sequence for sequence in pending if sequence]
    return merged
