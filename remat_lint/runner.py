"""Lints a set of files with one configuration: reading, per-file rule selection, the cache, the
worker pool and the project pass.

Reading problems (unreadable, undecodable files) become REM000 findings; linting goes on. The
main process reads every file and runs the textual prefilter stages (stage 3 too, where the text
tells) and the cache lookup (all cheap); only files that may need a parse reach the engine, in
worker processes when there is enough of them. libcst is imported only then: when the first such
file turns up early in a large tree, a worker starts importing it (0.12 s, a fifth of a cold run
on jax+flax) while the main process goes on reading (``_Workers``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from remat_lint.cache import Cache
from remat_lint.config import Settings
from remat_lint.discovery import discover
from remat_lint.findings import Finding
from remat_lint.prefilter import Prefilter, prefilter_for
from remat_lint.registry import rule_index
from remat_lint.resolver import Resolver
from remat_lint.results import FileResult, SourceFile, build_project, diagnostic, project_codes, project_phase
from remat_lint.sources import SUFFIX as NOTEBOOK
from remat_lint.sources import Notebook

if TYPE_CHECKING:
    from multiprocessing import Queue
    from multiprocessing.synchronize import Event

# Below this many lines to parse a worker pool costs more than it saves (libcst: ~10k lines/s).
POOL_MIN_LINES = 3000
# Workers start at the first file to parse when at least this many files are left to read: the
# engine's import then overlaps reading them (about 0.15 ms a file).
EARLY_MIN_FILES = 100
PROJECT_MARKERS = ("pyproject.toml", ".git", ".hg")
_RELATED_DEPTH = 3  # rounds of files read for a candidate's aliases and its class's bases, their aliases...


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings
    files: int = 0
    notebooks: dict[str, Notebook] = field(default_factory=dict)  # path -> notebook, for those with findings


@dataclass
class _Task:
    index: int
    path: str
    text: str
    codes: frozenset[str]
    facts: frozenset[str]
    is_test_file: bool
    key: str | None  # cache key
    words: frozenset[str] = frozenset()  # words that make the file worth a parse (ProjectPass)


def read_source(path: str) -> SourceFile | Notebook | Finding:
    data = _read(path)
    return data if isinstance(data, Finding) else decode_source(path, data)


def _read(path: str) -> bytes | Finding:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return diagnostic(path, f"cannot read file: {exc.strerror or exc}")


def decode_source(path: str, data: bytes) -> SourceFile | Notebook | Finding:
    if path.endswith(NOTEBOOK):
        try:
            return Notebook.decode(data)
        except ValueError as exc:
            return diagnostic(path, f"cannot read notebook: {exc}")
    try:
        return SourceFile.decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return diagnostic(path, f"cannot decode file: {reason}")


def lint_one(path: str, source: SourceFile | Notebook | Finding, settings: Settings) -> FileResult:
    if isinstance(source, Finding):
        return FileResult(path, [source])
    from remat_lint.engine import lint_source

    facts = project_codes(settings.enabled_codes())
    return lint_source(path, source.text, settings.codes_for(path), facts=facts, is_test_file=settings.is_test_file(path),
                       defer_project=True)


def run(
    paths: list[str],
    resolver: Resolver,
    stdin: tuple[str, bytes] | None = None,
    *,
    jobs: int = 1,
    cache: Cache | None = None,
) -> RunResult:
    """Lint ``paths`` (or one stdin buffer named ``stdin[0]``) and apply the project-wide pass.

    ``jobs``: worker processes at most (a pool is started only when the work pays for it)."""
    # One file at a time: read, prefiltered and dropped, unless it needs a parse (then a task).
    inputs = [(stdin[0], stdin[1])] if stdin is not None else ((path, _read(path)) for path in paths)
    texts: dict[str, str] = {}  # of files with findings: reporters show their lines
    notebooks: dict[str, Notebook] = {}
    results = _lint(inputs, resolver, jobs=jobs, cache=cache, texts=texts, notebooks=notebooks, files=len(paths))
    ProjectPass([stdin[0]] if stdin is not None else paths, resolver, jobs=jobs, cache=cache)(results)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    resolver.retarget(findings)
    with_findings = {f.path for f in findings}
    return RunResult(findings, {p: t for p, t in texts.items() if p in with_findings}, len(results),
                     {p: nb for p, nb in notebooks.items() if p in with_findings})


def _lint(
    inputs: Iterable[tuple[str, bytes | Finding]],
    resolver: Resolver,
    *,
    jobs: int,
    cache: Cache | None,
    texts: dict[str, str] | None = None,
    words: frozenset[str] = frozenset(),
    notebooks: dict[str, Notebook] | None = None,
    files: int = 0,
) -> list[FileResult]:
    """One result per input, in order: prefilter and cache here, parses in ``_Workers`` started
    while reading (a large tree) or in ``_lint_tasks``.
    ``texts`` receives the texts of files with findings; a file holding one of ``words`` is parsed
    for its project summary although the prefilter rejects it. ``files``: how many inputs there are."""
    scan = _Scan(resolver, cache, words, texts, notebooks)
    tasks: list[_Task] = []
    workers: _Workers | None = None
    try:
        for index, (path, data) in enumerate(inputs):
            task = scan(index, path, data)
            if task is None:
                continue
            tasks.append(task)
            if workers is None and jobs > 1 and _FORK and files - index > EARLY_MIN_FILES:
                workers = _Workers(jobs)  # it imports the engine while the rest is read
            if workers is not None:
                workers.submit(task)
        pairs = workers.run(tasks) if workers is not None else _lint_tasks(tasks, jobs)
    finally:
        if workers is not None:
            workers.close()
    results = scan.results
    for task, result in pairs:
        results[task.index] = result
        if texts is not None and result.findings:
            texts[task.path] = task.text
        if cache is not None and task.key is not None:
            cache.put(task.key, result)
    return results


@dataclass
class _Scan:
    """The main process's part of ``_lint``, one input at a time: decode, prefilter, cache lookup."""

    resolver: Resolver
    cache: Cache | None
    words: frozenset[str]
    texts: dict[str, str] | None
    notebooks: dict[str, Notebook] | None
    results: list[FileResult] = field(default_factory=list)  # one per input; a task's is replaced by its own

    def __call__(self, index: int, path: str, data: bytes | Finding) -> _Task | None:
        """The task for an input that needs the engine; None when its result is known here."""
        cache, words, results = self.cache, self.words, self.results
        source = data if isinstance(data, Finding) else decode_source(path, data)
        results.append(FileResult(path, [source] if isinstance(source, Finding) else []))
        if isinstance(source, Finding):
            return None
        if self.notebooks is not None and isinstance(source, Notebook):
            self.notebooks[path] = source
        settings = self.resolver(path)
        codes = settings.codes_for(path)
        facts = project_codes(settings.enabled_codes())  # of every file, whatever its per-file ignores
        wanted = codes | facts
        named = bool(words) and Prefilter(words).textual(source.text) is True
        if not wanted:
            return None
        prefilter = prefilter_for(wanted)
        textual = prefilter.textual(source.text)
        if textual is False and not named:
            return None
        is_test = settings.is_test_file(path)
        key = cache.key(data, codes, is_test, facts) if cache is not None else None  # type: ignore[arg-type]
        cached = cache.get(key, path) if cache is not None and key is not None else None
        if cached is not None and not (named and cached.summary is None):
            results[index] = cached
            if self.texts is not None and cached.findings:
                self.texts[path] = source.text
        elif textual is None and not named and prefilter.rejected_by_text(source.text):
            # What the engine would return, here: no libcst import or worker for it (the engine's
            # rules are these or fewer, so its prefilter rejects the file too).
            if cache is not None and key is not None:
                cache.put(key, results[index])
        else:
            return _Task(index, path, source.text, codes, facts, is_test, key, words if named else frozenset())
        return None


class ProjectPass:
    """The project phase (remat_lint/project/): project-wide rules decide their findings with the
    whole project in view (REM008: a policy name that no file declares; REM101: a checkpoint
    differentiated whole in another module; REM004, REM011: a Module class from another module).

    When the linted files are part of a project (pre-commit passes the staged files, an editor
    one buffer), the other files count as well: the first time a project-wide rule fires, the
    project's other files are linted for their summaries and facts; their findings are never
    reported. They are linted as a run on the whole project would lint them (checking costs
    little beside the parse and the analysis that facts need), so that both runs share cache
    entries; a file that names a candidate's symbol (``loss_fn``, a checkpoint another module may
    differentiate), an alias of it or a base of its class is parsed although the prefilter rejects
    it. The project's files are those a
    run on ``project_root`` would lint; when a linted file is not among them, only the linted
    files count."""

    def __init__(self, linted: Iterable[str], resolver: Resolver, *, jobs: int = 1, cache: Cache | None = None,
                 read: Callable[[str], bytes | Finding] | None = None) -> None:
        self.resolver, self.jobs, self.cache = resolver, jobs, cache
        self.read = read or _read  # the server reads open buffers before the disk
        self.codes = project_codes(frozenset(info.code for info in rule_index()))
        # Per project root and candidates' symbols: the other files, once collected (the server
        # calls one pass again and again as a buffer changes).
        self.others: dict[tuple[str | None, frozenset[str]], list[FileResult]] = {}
        self.members: dict[str | None, frozenset[str]] = {}  # per project root: its files (real paths), once discovered

    def __call__(self, results: list[FileResult]) -> None:
        if not any(f.code in self.codes and f.data.get("pending") for r in results for f in r.findings):
            return
        groups: dict[str | None, list[FileResult]] = {}  # files of several projects are linted at once
        roots: dict[str, str | None] = {}  # per folder
        for result in results:
            real = os.path.realpath(result.path)
            folder = os.path.dirname(real)
            if folder not in roots:
                roots[folder] = project_root(self.resolver, [real])
            groups.setdefault(roots[folder], []).append(result)
        for root, group in groups.items():
            symbols = frozenset(str(s) for r in group for f in r.findings if f.code in self.codes for s in f.data.get("symbols", ()))
            if (root, symbols) not in self.others:
                self.others[root, symbols] = self._other_facts(root, group, symbols)
            project_phase(group, build_project(root, [*group, *self.others[root, symbols]]), self.codes)

    def holds(self, path: str) -> bool:
        """Whether ``path`` is one of the files of a project collected."""
        real = os.path.realpath(path)
        return any(real in members for members in self.members.values())

    def refresh(self, path: str) -> None:
        """``path``, a file of a project collected, changed (the server, as a buffer changes): its
        summary and facts afresh, the rest kept (aliases it newly names are followed at the next
        collection)."""
        real = os.path.realpath(path)
        for (root, symbols), others in self.others.items():
            if real in self.members.get(root, ()):
                found = _lint([(path, self.read(path))], self.resolver, jobs=1, cache=self.cache, words=symbols)
                kept = [r for r in others if os.path.realpath(r.path) != real]
                self.others[root, symbols] = kept + [FileResult(r.path, facts=r.facts, summary=r.summary) for r in found if r.summary is not None]

    def _other_facts(self, root: str | None, group: list[FileResult], symbols: frozenset[str]) -> list[FileResult]:
        """The summaries and facts of the files of the project at ``root`` beside ``group``, and of
        linted files the prefilter skipped that name one of ``symbols``. When a linted file is not
        one of the project's files (excluded, another folder), only the linted files count."""
        linted = {os.path.realpath(r.path): r.path for r in group}
        paths = {real: r.path for r in group if r.summary is None and symbols and (real := os.path.realpath(r.path))}
        if root is not None:
            project = {os.path.realpath(path): path for path in discover([root], self.resolver).files}
            self.members[root] = frozenset(project)
            if linted.keys() <= project.keys():
                paths.update((real, path) for real, path in project.items() if real not in linted)
        others: list[FileResult] = []
        words, seen = symbols, set(symbols)
        for _ in range(_RELATED_DEPTH):  # then the files naming the symbols' aliases and their classes' bases
            found = _lint(((path, self.read(path)) for path in paths.values()), self.resolver, jobs=self.jobs, cache=self.cache,
                          words=words)
            found = [FileResult(r.path, facts=r.facts, summary=r.summary) for r in found if r.summary is not None]
            others += found
            words = frozenset(name for r in [*group, *found] if r.summary for name in r.summary.related_names(words)) - seen
            if not words:
                break
            seen |= words
            summarized = {os.path.realpath(r.path) for r in others}
            paths = {real: path for real, path in paths.items() if real not in summarized}
        return others


def project_root(resolver: Resolver, linted: Iterable[str]) -> str | None:
    """The folder of the configuration that governs the linted files; without one, the nearest folder
    above the linted files that holds a pyproject.toml, .git or .hg (black's project root:
    pre-commit runs at the top of a git checkout, whose pyproject.toml rarely configures us).
    ``linted``: absolute paths."""
    common = os.path.commonpath([os.path.dirname(path) for path in linted])
    settings = resolver.in_folder(common)
    if settings.config_file is not None:
        return os.path.dirname(os.path.abspath(settings.config_file))
    for directory in (common, *Path(common).parents):
        if any(os.path.exists(os.path.join(directory, marker)) for marker in PROJECT_MARKERS):
            return str(directory)
    return None


def _lint_tasks(tasks: list[_Task], jobs: int) -> list[tuple[_Task, FileResult]]:
    if not tasks:
        return []
    import remat_lint.engine  # noqa: F401 -- libcst and the rules, imported once before the workers fork

    if min(jobs, len(tasks)) <= 1 or _lines(tasks) < POOL_MIN_LINES:
        return [(task, _lint_task(task)) for task in tasks]
    workers = _Workers(min(jobs, len(tasks)))
    try:
        for task in sorted(tasks, key=lambda t: -len(t.text)):
            workers.submit(task)
        return workers.run(tasks)
    finally:
        workers.close()


def _lines(tasks: list[_Task]) -> int:
    return sum(task.text.count("\n") for task in tasks)


_FORK = sys.platform == "linux"  # workers are forked: they inherit the modules imported and the settings


class _Workers:
    """Worker processes taking tasks from one queue. The first imports the engine (libcst and the
    rules) as soon as it starts, while the main process may still be reading files, then forks the
    others, which inherit the import (a pool forked from the main process would wait for the main
    process's import, or import it in every worker). Tasks submitted before the workers are ready
    are sent largest first, so that the workers end together; later ones at once, so that the
    workers lint while the main process reads (on a large tree)."""

    def __init__(self, jobs: int) -> None:
        import multiprocessing

        self.jobs = jobs
        context = multiprocessing.get_context("fork" if _FORK else None)
        self._tasks = context.Queue()  # the tasks, then one None per worker
        self._results = context.Queue()  # (task index, result)
        self._ready = context.Event()  # the engine is imported, the others forked
        self._first = context.Process(target=_serve, args=(self._tasks, self._results, self._ready, jobs))
        self._first.start()
        self._waiting: list[_Task] = []
        self._stopped = False

    def submit(self, task: _Task) -> None:
        self._waiting.append(task)
        if self._ready.is_set():
            self._send()

    def run(self, tasks: list[_Task]) -> list[tuple[_Task, FileResult]]:
        """The results of ``tasks``, all submitted."""
        import queue

        self._send()
        self._stop()
        done: dict[int, FileResult] = {}
        while len(done) < len(tasks):
            try:
                index, result = self._results.get(timeout=1)
            except queue.Empty:
                if not self._first.is_alive():  # it waits for the others: one of them died (a crash in libcst?)
                    raise RuntimeError("a worker process ended without returning its results") from None
                continue
            done[index] = result
        return [(task, done[task.index]) for task in tasks]

    def _send(self) -> None:
        for task in sorted(self._waiting, key=lambda t: -len(t.text)):
            self._tasks.put(task)
        self._waiting.clear()

    def _stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            for _ in range(self.jobs):
                self._tasks.put(None)

    def close(self) -> None:
        import queue

        self._stop()  # when the main process failed while reading: no more task will come
        self._first.join(0.05)
        while self._first.is_alive():  # and read what they still send: a worker cannot end with results in the pipe
            with contextlib.suppress(queue.Empty):
                while True:
                    self._results.get_nowait()
            self._first.join(0.05)
        self._tasks.close()  # and end its thread: a later fork copies no thread
        self._tasks.join_thread()


def _serve(tasks: Queue[Any], results: Queue[Any], ready: Event, jobs: int) -> None:
    """The first worker: imports the engine, forks the others, lints tasks until told to stop."""
    import multiprocessing

    import remat_lint.engine  # noqa: F401 -- what the others inherit

    context = multiprocessing.get_context("fork" if _FORK else None)
    others = [context.Process(target=_work, args=(tasks, results)) for _ in range(jobs - 1)]
    for other in others:
        other.start()
    ready.set()
    _work(tasks, results)
    for other in others:
        other.join()


def _work(tasks: Queue[Any], results: Queue[Any]) -> None:
    for task in iter(tasks.get, None):
        results.put((task.index, _lint_task(task)))


def _lint_task(task: _Task) -> FileResult:
    from remat_lint.engine import lint_source

    return lint_source(task.path, task.text, task.codes, facts=task.facts, is_test_file=task.is_test_file,
                       words=task.words, defer_project=True)


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def display_path(path: str) -> str:
    """Paths under the working directory are shown relative to it, as ruff does."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
