"""The one lint pipeline, which every frontend and benchmark that lints files runs.

    paths ─► discover_files     Python files: excludes, .gitignore (engine/files.py)
          ─► prepare_project    the project index of every project the files belong to, once,
                                in the pool, before the workers fork (engine/project.py)
          ─► lint_files         per file: read and decode (engine/source.py), look up the lint
                                cache (engine/cache.py: keyed on the bytes, the settings, and
                                what reaches the file), then lint, fix or add `# noqa` in a pool
                                of forked workers (engine/pool.py), each writing its own cache
                                entries
          ─► one LintResult per file, in the order given

`RunOptions` says which: the project index to read (none: each file on its own), how
many processes, whether the cache is used, a fix (`Fixing`) or `--add-noqa` instead of
a plain lint, and a progress display. A run answered from the cache never imports the
linter (libcst, the rules): the workers' modules are imported only when a file misses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from compile_lint.core.results import LintResult
from compile_lint.core.source_index import SourceIndex
from compile_lint.engine.add_noqa import add_noqa_file
from compile_lint.engine.cache import LintCache, cache_root, content_digest
from compile_lint.engine.called_modules import called_modules, unresolved
from compile_lint.engine.files import discover
from compile_lint.engine.fixing import AcceptAll, fix_file, fix_files_together
from compile_lint.engine.pool import Progress, by_size_descending, no_progress, parallel_map
from compile_lint.engine.project import ProjectIndex
from compile_lint.engine.single_file import lint_source
from compile_lint.engine.source import SourceError, decode_source, read_bytes
from compile_lint.engine.stopping import record_progress
from compile_lint.engine.suppressions import malformed_noqa
from compile_lint.settings.config import Config


@dataclass(frozen=True)
class Fixing:
    """A run that fixes: `unsafe` fixes too; `write` the fixed files back (False: only compute
    them, for `--diff`); `accept_all`, asked once about every changed file before any is
    written (the runtime verifier, `--verify`), fixes the files one by one in this process."""

    unsafe: bool = False
    write: bool = True
    accept_all: Optional[AcceptAll] = None


@dataclass(frozen=True)
class RunOptions:
    """How `lint_files` runs; the defaults lint each file on its own, in this process, uncached."""

    project: Optional[ProjectIndex] = None  # what reaches each file from its project; None: nothing
    jobs: int = 1  # processes (a pool of forked workers from 8 files on)
    cache: bool = False  # read and write the lint cache (plain lints only)
    fix: Optional[Fixing] = None
    add_noqa: bool = False  # silence every finding with a noqa comment naming its code instead
    progress: Progress = no_progress  # shown the results as they come ("Indexing", "Linting", ...)


@dataclass(frozen=True)
class _Shared:
    """What every file of one run is linted with; a worker receives it once, then only paths."""

    config: Config
    project: Optional[ProjectIndex]
    cache_root: Optional[str] = None  # write each file's findings to this cache, if set
    unsafe: bool = False
    write: bool = True


def discover_files(paths: Sequence[str], config: Config) -> tuple[list[str], list[str]]:
    """The Python files under `paths` (sorted) and a one-line error for each path that cannot be read."""
    errors: list[str] = []
    return discover(list(paths), config, errors), errors


def prepare_project(files: Sequence[str], config: Config, options: RunOptions) -> None:
    """Index the projects of `files` now (in the pool for many files), not inside a worker.

    Raises `EntryPointError` for an unknown `entry-points` target. `lint_files` does it
    when the caller has not; a caller that reports that error before anything else runs
    calls it first.
    """
    if options.project is None:
        return

    def map_function(function, items):
        return parallel_map(function, list(items), options.jobs, "Indexing", progress=options.progress)

    options.project.prepare(config, files, map_function)


def lint_files(files: Sequence[str], config: Config, options: RunOptions = RunOptions()) -> list[LintResult]:
    """Lint (or fix, or add `# noqa` to) each file: one result per file, in the order given.

    Raises `EntryPointError` for an unknown `entry-points` target (before any file is read).
    """
    project = options.project
    if project is not None and not project.frozen:
        prepare_project(files, config, options)
    shared = _Shared(config, project)
    if options.add_noqa:
        return parallel_map(_add_noqa_one, list(files), options.jobs, "Adding noqa", shared, options.progress)
    if options.fix is not None and options.fix.accept_all is not None:
        return fix_files_together(files, config, options.fix.accept_all, unsafe=options.fix.unsafe,
                                  write=options.fix.write, project=project)
    if options.fix is not None:
        shared = _Shared(config, project, unsafe=options.fix.unsafe, write=options.fix.write)
        return parallel_map(_fix_one, list(files), options.jobs, "Fixing", shared, options.progress)
    return _lint_cached(files, config, options)


def lint_paths(paths: Sequence[str], config: Config, options: RunOptions = RunOptions()) -> list[LintResult]:
    """`discover_files`, then `lint_files`: a path that cannot be read is a result with an `error`, first."""
    files, errors = discover_files(paths, config)
    results = lint_files(files, config, options)
    return [LintResult(error.rsplit(": ", 1)[0], error=error) for error in errors] + results


def modules_not_found(results: Sequence[LintResult], config: Config) -> list[tuple[str, str, int]]:
    """(module, path, line) of each module the results' traced code calls through an import that cannot
    be found (not in the project or the `src` folders, not installed), once each: its first call in the
    order of the results."""
    return unresolved(((module, result.path, line) for result in results for module, line in result.called_modules),
                      config)


def called_modules_only(files: Sequence[str], config: Config, options: RunOptions) -> list[LintResult]:
    """Each file's result with only `called_modules` filled, without a lint (`--show-settings`)."""
    prepare_project(files, config, options)
    return [LintResult(path, called_modules=called_modules(path, config, options.project)) for path in files]


def library_results(files: Sequence[str], config: Config, project: ProjectIndex) -> list[LintResult]:
    """The findings inside installed libraries that the files' traced calls reach, one result per
    library file, each finding at its place there and marked as the library's (`--show-library-findings`)."""
    from compile_lint.engine.library_findings import library_sites
    from compile_lint.engine.lint import library_linter

    reaches = [reach for path in files if (reach := project.reach(config, path)) is not None and reach.library_calls]
    by_path: dict[str, list] = {}
    for diagnostic in library_sites(reaches, config, library_linter(config)):
        by_path.setdefault(diagnostic.path, []).append(diagnostic)
    results = []
    for path, diagnostics in sorted(by_path.items()):
        try:
            text = decode_source(read_bytes(path), path).text
        except SourceError:
            text = ""
        results.append(LintResult(path, diagnostics, text=text))
    return results


def _reach_digest(shared: _Shared, path: str) -> str:
    return shared.project.digest(shared.config, path) if shared.project is not None else ""


def _lint_cached(files: Sequence[str], config: Config, options: RunOptions) -> list[LintResult]:
    """The outcome for each file, in the order given, from the cache where it can."""
    cache = LintCache.for_run(cache_root(config), config) if options.cache else None
    shared = _Shared(config, options.project, cache.root if cache is not None else None)
    outcomes: list[LintResult] = []
    misses = []
    for path in files:
        if cache is None:
            misses.append(path)
            continue
        try:
            data = read_bytes(path)
        except SourceError:
            misses.append(path)
            continue
        entry = cache.get(path, content_digest(path, data + _reach_digest(shared, path).encode()))
        if entry is None:
            misses.append(path)
            continue
        cached = entry.diagnostics
        text = ""
        if cached or b"noqa" in data.lower():  # the findings' text, or the directives to check
            try:
                text = decode_source(data, path).text
            except SourceError:
                misses.append(path)
                continue
        outcomes.append(LintResult(path, cached, text=text if cached else "",
                                   malformed_noqa=[] if config.ignore_noqa else malformed_noqa(SourceIndex(text)),
                                   called_modules=entry.called_modules))
    try:
        outcomes.extend(parallel_map(_lint_one, by_size_descending(misses), options.jobs, "Linting", shared,
                                     options.progress))
    except KeyboardInterrupt as stop:  # stopped: the files answered from the cache were done too
        record_progress(stop, None, len(outcomes), len(outcomes))
        raise
    order = {path: index for index, path in enumerate(files)}
    return sorted(outcomes, key=lambda outcome: order[outcome.path])


def _lint_one(path: str, shared: _Shared) -> LintResult:
    """Lint one file and cache its findings (in a worker process when there are many)."""
    try:
        data = read_bytes(path)
        source = decode_source(data, path)
    except SourceError as error:
        return LintResult(path, error=f"{path}: {error}")
    result = lint_source(source.text, path, shared.config, project=shared.project)
    result.digest = content_digest(path, data + _reach_digest(shared, path).encode())
    result.called_modules = called_modules(path, shared.config, shared.project)
    if shared.cache_root is not None:
        LintCache.for_run(shared.cache_root, shared.config).put(path, result.digest, result.diagnostics,
                                                                result.dependencies, result.called_modules)
    if not result.diagnostics:
        result.text = ""  # the text is kept only for the report of a file with findings
    return result


def _fix_one(path: str, shared: _Shared) -> LintResult:
    """Fix one file to a fixed point (in a worker process when there are many)."""
    result = fix_file(path, shared.config, unsafe=shared.unsafe, write=shared.write, project=shared.project)
    result.called_modules = called_modules(path, shared.config, shared.project)
    return result


def _add_noqa_one(path: str, shared: _Shared) -> LintResult:
    """Silence one file's findings with `# noqa` (in a worker process when there are many)."""
    return add_noqa_file(path, shared.config, shared.project)
