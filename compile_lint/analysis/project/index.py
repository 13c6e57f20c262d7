"""The project index's store: every project file's summary, kept on disk by file stat and digest.

One summary per file (`summary.py`, made by `summariser.py` with `ast`, never libcst) is
what the call graph needs. Summaries are built in parallel by the caller's map function
when there are many files, and kept in one cache file per project next to the lint cache:
an entry is reused while the file's stat is unchanged, or, when only the stat changed,
while the digest of its bytes is. Beside it, a small second file keeps the project's
traced set as the last run found it (`IndexStore.unchanged_answer`).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from typing import Callable, Optional, Sequence

from compile_lint.analysis.project.summariser import summarise_file
from compile_lint.analysis.project.summary import FileSummary
from compile_lint.storage.atomic import atomic_file
from compile_lint.storage.stamps import file_stamp

# The layout of the cache files: a store of another format is read as empty.
INDEX_FORMAT = 11  # 10: summaries without tags; 11: FileReach.calls and allowed_breaks


class IndexStore:
    """The summaries of one project's files, loaded from and saved to one cache file.

    Beside it, a small second file keeps the project's traced set as the last run found
    it, with the stat and digest of every file it rests on: a run over an unchanged project
    checks those stats and reads it back without loading a summary (`unchanged_answer`).
    """

    def __init__(self, cache_file: Optional[str]) -> None:
        self.cache_file = cache_file
        self._entries: Optional[dict[str, tuple[tuple[int, int], FileSummary]]] = None
        self._digests: Optional[dict[str, tuple[tuple[int, int], str]]] = None
        self._answer: Optional[tuple[str, dict[str, tuple[tuple[int, int], str]], object]] = None
        self._dirty = False

    @property
    def entries(self) -> dict[str, tuple[tuple[int, int], FileSummary]]:
        """Path -> (stat stamp, summary), loaded from the cache file on first use."""
        if self._entries is None:
            stored = _load(self.cache_file)
            self._entries = stored["entries"] if stored is not None else {}
        return self._entries

    @property
    def digest_entries(self) -> dict[str, tuple[tuple[int, int], str]]:
        """Path -> (stat stamp, digest of its bytes), loaded from the cache file on first use."""
        if self._digests is None:
            stored = _load(self.cache_file)
            self._digests = stored.get("digests", {}) if stored is not None else {}
        return self._digests

    def stamp(self, path: str) -> tuple[int, int]:
        """A file's stat stamp ((0, 0) when it cannot be stat'ed)."""
        return file_stamp(path) or (0, 0)

    def digests(self, paths: Sequence[str]) -> dict[str, str]:
        """The digest of each path's bytes: from the store while its stat is unchanged, else read anew."""
        found: dict[str, str] = {}
        table = self.digest_entries
        for path in paths:
            stamp = file_stamp(path)
            known = table.get(path)
            if known is not None and stamp is not None and known[0] == stamp:
                found[path] = known[1]
                continue
            try:
                with open(path, "rb") as handle:
                    digest = hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
            except OSError:
                digest = ""
            table[path] = (stamp or (0, 0), digest)
            found[path] = digest
            self._dirty = True
        return found

    def _answer_file(self) -> Optional[str]:
        return self.cache_file[:-len(".pickle")] + ".answer.pickle" if self.cache_file else None

    def unchanged_answer(self, listed: Sequence[str], key_for: Callable[[dict[str, str]], str],
                         ) -> Optional[tuple[dict[str, tuple[tuple[int, int], str]], object]]:
        """(path -> (stat stamp, digest), answer) of the kept answer, when no file it rests on changed
        its stat (so the stamps are the files' current ones), `listed` names no file it does not
        know, and `key_for(path -> digest)` is the key it was kept under."""
        stored = _load(self._answer_file())
        if stored is None:
            return None
        files: dict[str, tuple[tuple[int, int], str]] = stored["files"]
        if any(path not in files for path in listed):
            return None
        if any(file_stamp(path) != stamp for path, (stamp, _) in files.items()):
            return None
        digests = {path: digest for path, (_, digest) in files.items()}
        return (files, stored["answer"]) if stored["key"] == key_for(digests) else None

    def summaries(self, paths: Sequence[str], map_function=None) -> dict[str, FileSummary]:
        """The summary of each path: from the store while its stat (or digest) is unchanged, else read anew."""
        result: dict[str, FileSummary] = {}
        stale: list[str] = []
        for path in paths:
            stamp = file_stamp(path)
            entry = self.entries.get(path)
            if stamp is None:
                continue
            if entry is not None and entry[0] == stamp:
                result[path] = entry[1]
            else:
                stale.append(path)
        if stale:
            summaries = (map_function(summarise_file, stale) if map_function is not None and len(stale) > 1
                         else [summarise_file(path) for path in stale])
            for path, summary in zip(stale, summaries):
                if summary is None:
                    continue
                stamp = file_stamp(path)
                entry = self.entries.get(path)
                if entry is not None and entry[1].digest == summary.digest:
                    summary = entry[1]  # same bytes, new stat: keep the summary, refresh the stamp
                self.entries[path] = (stamp or (0, 0), summary)
                result[path] = summary
            self._dirty = True
        return result

    def keep_answer(self, key: str, paths: Sequence[str], answer: object,
                    others: Optional[dict[str, tuple[tuple[int, int], str]]] = None) -> None:
        """Keep `answer` (picklable), resting on the current summaries of `paths`, and on `others` (path ->
        (stat stamp, digest) of files kept elsewhere: installed libraries'), for `unchanged_answer`."""
        files = {path: self.digest_entries[path] for path in paths if path in self.digest_entries}
        files.update(others or {})
        self._answer = (key, files, answer)

    def save(self) -> None:
        """Write what changed atomically (temp files renamed over the cache files); silent when it cannot."""
        if self.cache_file is None:
            return
        if self._dirty and _dump(self.cache_file, {"format": INDEX_FORMAT, "entries": self.entries,
                                                   "digests": self.digest_entries}):
            self._dirty = False
        answer_file = self._answer_file()
        if self._answer is not None and answer_file is not None:
            key, files, answer = self._answer
            _dump(answer_file, {"format": INDEX_FORMAT, "key": key, "files": files, "answer": answer})
            self._answer = None


def _load(cache_file: Optional[str]) -> Optional[dict]:
    """A cache file's content when it holds this format, else None (missing, unreadable, older)."""
    if cache_file is None:
        return None
    try:
        with open(cache_file, "rb") as handle:
            stored = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, KeyError, TypeError, ValueError, ImportError):
        return None
    return stored if isinstance(stored, dict) and stored.get("format") == INDEX_FORMAT else None


def _dump(cache_file: str, content: dict) -> bool:
    """Write `content` to `cache_file` atomically; False when it cannot."""
    try:
        os.makedirs(os.path.dirname(cache_file), exist_ok=True)
        with atomic_file(cache_file) as stream:
            pickle.dump(content, stream, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        return False
    return True
