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
from typing import TYPE_CHECKING, Any, Iterable

from remat_lint.cache.import_index import ImportIndex
from remat_lint.cache.result_cache import Cache
from remat_lint.config.discovery import discover
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import Settings
from remat_lint.engine.prefilter.stages import Prefilter, prefilter_for
from remat_lint.engine.results import FileResult, build_project, diagnostic, project_codes, project_phase
from remat_lint.engine.sources import SUFFIX as NOTEBOOK
from remat_lint.engine.sources import Notebook, SourceFile
from remat_lint.engine.unsaved import Unsaved
from remat_lint.findings import Finding
from remat_lint.project.exports import may_export
from remat_lint.project.imports import ImportFacts, ProjectFiles
from remat_lint.registry import rule_index

if TYPE_CHECKING:
    from multiprocessing import Queue
    from multiprocessing.connection import Connection
    from multiprocessing.synchronize import Event

    from remat_lint.output.noqa import Suppressions

# Below this many lines to parse a worker pool costs more than it saves (libcst: ~10k lines/s).
POOL_MIN_LINES = 3000
# Workers start at the first file to parse when at least this many files are left to read: the
# engine's import then overlaps reading them (about 0.15 ms a file).
EARLY_MIN_FILES = 100
# A file this large is linted in a spawned process (spawned_worker.py) when the run lints in-process
# (-j 1, few lines): libcst's parser can crash the process on it (measured: a chain of 8,000 `and`
# operands, 48 KB, overflows its stack; Python's parser accepts it, so the prefilter cannot tell).
ISOLATE_MIN_CHARS = 32_768
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
    from remat_lint.engine.lint import lint_source

    facts = project_codes(settings.enabled_codes())
    return lint_source(
        path,
        source.text,
        settings.codes_for(path),
        facts=facts,
        is_test_file=settings.is_test_file(path),
        defer_project=True,
    )


def run(
    paths: list[str],
    resolver: Resolver,
    stdin: tuple[str, bytes] | None = None,
    *,
    jobs: int = 1,
    cache: Cache | None = None,
    ignore_noqa: bool = False,
) -> RunResult:
    """Lint ``paths`` (or one stdin buffer named ``stdin[0]``) and apply the project-wide pass.

    ``jobs``: worker processes at most (a pool is started only when the work pays for it).
    ``ignore_noqa``: report what ``# noqa`` comments suppressed too (``--ignore-noqa``)."""
    # One file at a time: read, prefiltered and dropped, unless it needs a parse (then a task).
    inputs = [(stdin[0], stdin[1])] if stdin is not None else ((path, _read(path)) for path in paths)
    texts: dict[str, str] = {}  # of files with findings: reporters show their lines
    notebooks: dict[str, Notebook] = {}
    results = _lint(inputs, resolver, jobs=jobs, cache=cache, texts=texts, notebooks=notebooks, files=len(paths))
    if ignore_noqa:  # the cache keeps what a run with noqa reports; the suppressed findings beside it
        for result in results:
            result.findings += result.suppressed
            result.candidates += result.suppressed_candidates
    decoded = decode_source(*stdin) if stdin is not None else None
    unsaved = Unsaved.of({stdin[0]: decoded.text}) if stdin is not None and isinstance(decoded, SourceFile) else None
    ProjectPass(
        [stdin[0]] if stdin is not None else paths,
        resolver,
        jobs=jobs,
        cache=cache,
        unsaved=unsaved,
        ignore_noqa=ignore_noqa,
    )(results)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    resolver.retarget(findings)
    with_findings = {f.path for f in findings}
    for path in with_findings - texts.keys():  # a call that the project phase found wrong: reporters show its line
        source = decoded if stdin is not None else read_source(path)
        if isinstance(source, SourceFile):
            texts[path] = source.text
    return RunResult(
        findings,
        {p: t for p, t in texts.items() if p in with_findings},
        len(results),
        {p: nb for p, nb in notebooks.items() if p in with_findings},
    )


def _lint(
    inputs: Iterable[tuple[str, bytes | Finding]],
    resolver: Resolver,
    *,
    jobs: int,
    cache: Cache | None,
    texts: dict[str, str] | None = None,
    words: frozenset[str] = frozenset(),
    named_only: bool = False,
    notebooks: dict[str, Notebook] | None = None,
    files: int = 0,
) -> list[FileResult]:
    """One result per input, in order: prefilter and cache here, parses in ``_Workers`` started
    while reading (a large tree) or in ``_lint_tasks``.
    ``texts`` receives the texts of files with findings; a file holding one of ``words`` is parsed
    for its project summary although the prefilter rejects it; with ``named_only``, a file holding
    none is skipped (no parse, no cache entry read). ``files``: how many inputs there are."""
    scan = _Scan(resolver, cache, words, texts, notebooks, named_only)
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
        if texts is not None and (result.findings or result.suppressed or result.candidates):
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
    named_only: bool = False
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
        named = bool(words) and Prefilter(words, symbols=True).textual(source.text) is True
        if self.named_only and not named:
            return None  # neither calls nor re-exports a candidate's wrap: nothing of it is needed
        if not wanted:
            return None
        prefilter = prefilter_for(wanted)
        textual = prefilter.textual(source.text)
        if textual is False and not named:
            return None
        is_test = settings.is_test_file(path)
        key = cache.key(data, codes, is_test, facts) if cache is not None else None  # type: ignore[arg-type]  # ``data`` is bytes here: a Finding (unreadable file) returned above
        cached = cache.get(key, path) if cache is not None and key is not None else None
        if cached is not None and not (named and cached.summary is None):
            results[index] = cached
            if self.texts is not None and (cached.findings or cached.suppressed or cached.candidates):
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
    differentiated whole in another module; REM004, REM011: a Module class from another module;
    REM012, REM016: a call in a linted file that breaks the wrap of a module it imports).

    When the linted files are part of a project (pre-commit passes the staged files, an editor
    one buffer), the other files count as well: the files they import, transitively, are read for
    their summaries, facts and the candidates of rules that report at calls (``imports.py``); the
    first time a project-wide rule fires in a linted file, the project's other files are linted
    for their summaries and facts. Findings in files that were not linted are never reported.
    Other files are linted as a run on the whole project would lint them (checking costs
    little beside the parse and the analysis that facts need), so that both runs share cache
    entries; a file that names a candidate's symbol (``loss_fn``, a checkpoint another module may
    differentiate), an alias of it or a base of its class is parsed although the prefilter rejects
    it. The project's files are those a
    run on ``project_root`` would lint; when a linted file is not among them, only the linted
    files count. ``unsaved``: the texts of files, linted or not, that are not on disk (stdin,
    flake8's, fixed in memory, the server's open buffers), read before the disk.
    ``ignore_noqa``: a finding moved to a call is reported whatever `# noqa` the call's line has.
    The server calls one pass again and again as a buffer changes (``holds``, ``refresh``)."""

    def __init__(
        self,
        linted: Iterable[str],
        resolver: Resolver,
        *,
        jobs: int = 1,
        cache: Cache | None = None,
        unsaved: Unsaved | None = None,
        ignore_noqa: bool = False,
    ) -> None:
        self.resolver, self.jobs, self.cache, self.ignore_noqa = resolver, jobs, cache, ignore_noqa
        self.unsaved = unsaved or Unsaved()
        self.codes = project_codes(frozenset(info.code for info in rule_index()))
        # The words that an imported module names where it may export a wrap (project/exports.py).
        self.exports = [info.export_words for info in rule_index() if info.export_words is not None]
        # Per project root and candidates' symbols: the other files, once collected.
        self.others: dict[tuple[str | None, frozenset[str]], list[FileResult]] = {}
        self.members: dict[str | None, frozenset[str]] = {}  # per project root: its files (real paths), once discovered
        self.imported: set[str] = set()  # real paths of the imported files the last call read for facts
        self._noqa: dict[str, Suppressions] = {}  # real path -> its `# noqa` comments, during one call
        self._files: dict[str, ProjectFiles] = {}  # per project root
        self._indexes: dict[str, ImportIndex[ImportFacts]] = {}  # per project root: imported files' facts
        self._reals: dict[str, str] = {}  # path -> real path (several lookups per linted file)

    def __call__(self, results: list[FileResult]) -> None:
        self._noqa.clear()
        groups: dict[str | None, list[FileResult]] = {}  # files of several projects are linted at once
        roots: dict[str, str | None] = {}  # per folder
        for result in results:
            real = self._real(result.path)
            folder = os.path.dirname(real)
            if folder not in roots:
                roots[folder] = project_root(self.resolver, [real])
            groups.setdefault(roots[folder], []).append(result)
        for root, group in groups.items():
            symbols = self._symbols(group)
            if symbols is not None:
                if (root, symbols) not in self.others:
                    self.others[root, symbols] = self._other_facts(root, group, symbols)
                others = self.others[root, symbols]
            else:
                others = self._imported_facts(root, group)
                if self._symbols(others) is None:
                    continue
            linted = {self._real(r.path) for r in group}
            context = [r for r in others if self._real(r.path) not in linted]
            project = build_project(root, [*group, *others])
            project.unsaved = self.unsaved.texts
            project_phase(group, project, self.codes, context, self._admit)

    def _real(self, path: str) -> str:
        """``os.path.realpath(path)``, its folders' kept: a closure's files share few folders
        (MaxText's trainer: 178 in 27), and ``realpath`` alone probes each part of every path
        (1,400 ``lstat`` calls on that closure)."""
        if path not in self._reals:
            folder, name = os.path.split(path)
            whole = not os.path.isabs(path) or name in ("", ".", "..") or os.path.islink(path)
            self._reals[path] = os.path.realpath(path) if whole else os.path.join(self._real(folder), name)
        return self._reals[path]

    def holds(self, path: str) -> bool:
        """Whether ``path`` is one of the files of a project collected, or an imported file read."""
        real = self._real(path)
        return real in self.imported or any(real in members for members in self.members.values())

    def refresh(self, path: str) -> None:
        """``path``, a file of a project collected, changed (the server, as a buffer changes): its
        summary and facts afresh, the rest kept (aliases it newly names are followed at the next
        collection). Imported files are read afresh at every call."""
        real = self._real(path)
        for (root, symbols), others in self.others.items():
            if real in self.members.get(root, ()):
                found = _lint([(path, self._data(path) or b"")], self.resolver, jobs=1, cache=self.cache, words=symbols)
                kept = [r for r in others if self._real(r.path) != real]
                self.others[root, symbols] = kept + [_for_project(r) for r in found if r.summary is not None]

    def _symbols(self, results: list[FileResult]) -> frozenset[str] | None:
        """The symbols the project-wide candidates in ``results`` name; None when there is none."""
        candidates = [c for r in results for c in r.candidates if c.finding.code in self.codes]
        return frozenset(s for c in candidates for s in c.symbols) if candidates else None

    def _other_facts(self, root: str | None, group: list[FileResult], symbols: frozenset[str]) -> list[FileResult]:
        """The summaries and facts of the files of the project at ``root`` beside ``group``, and of
        linted files the prefilter skipped that name one of ``symbols``. When a linted file is not
        one of the project's files (excluded, another folder), only the linted files count."""
        paths = {real: r.path for r in group if r.summary is None and symbols and (real := self._real(r.path))}
        if root is not None and self._in_project(root, group):
            linted = {self._real(r.path) for r in group}
            project = {self._real(path): path for path in discover([root], self.resolver).files}
            self.members[root] = frozenset(project)
            paths.update((real, path) for real, path in project.items() if real not in linted)
        return self._summaries(paths, group, symbols)

    def _imported_facts(self, root: str | None, group: list[FileResult]) -> list[FileResult]:
        """The summaries, facts and candidates of the files of the project at ``root`` that the
        files of ``group`` import, transitively; then, when they hold candidates, of the files of
        ``group`` the prefilter skipped that name one of their symbols (a caller of a wrap)."""
        if root is None or not self._in_project(root, group):
            return []
        texts = {r.path: self._data(r.path) for r in group}
        read: dict[str, bytes] = {}  # the exporting files the closure read: linted from that one read
        imported = self._files[root].closure(
            {p: t for p, t in texts.items() if t is not None},
            lambda path: self._import_facts(root, path, read),
            self._real,
        )
        if root in self._indexes:
            self._indexes[root].save()
        self.imported = {self._real(path) for path, _ in imported}
        exporting = (
            (p, read[p] if p in read else self._data(p) or b"")
            for p, facts in imported
            if facts is not None and facts.may_export
        )
        found = _lint(exporting, self.resolver, jobs=self.jobs, cache=self.cache)
        others = [_for_project(r) for r in found if r.summary is not None]
        symbols = self._symbols(others)
        if not symbols:
            return others
        summarized = {self._real(r.path) for r in others}
        paths = {real: path for path, _ in imported if (real := self._real(path)) not in summarized}
        paths.update((real, r.path) for r in group if r.summary is None and (real := self._real(r.path)))
        return others + self._summaries(paths, group + others, symbols, named_only=True)

    def _import_facts(self, root: str, path: str, read: dict[str, bytes]) -> ImportFacts | None:
        """What a file linted alone needs of the file ``path`` that it imports: the names it
        imports and whether it may hold a candidate that reports at the linted files' calls
        (REM012's wrap with ``static_argnums``; ``project/exports.py``): only those are parsed at
        first, the others, when they name a candidate's symbol (a re-export), in ``_summaries``.
        Kept by the file's signature (``cache/import_index.py``) when it is read from the disk;
        ``read`` receives the bytes of a file read here that may export, which is linted next."""
        files = self._files[root]

        def compute(data: bytes) -> ImportFacts:
            facts = ImportFacts(files.names(path, data), may_export(data, self.exports))
            if facts.may_export:
                read[path] = data
            return facts

        # Text that is not on disk (stdin, flake8's, an editor's buffer): no signature on the disk tells it.
        if self.cache is None or self.unsaved.get(self._real(path)) is not None:
            data = self._data(path)
            return compute(data) if data is not None else None
        if root not in self._indexes:
            self._indexes[root] = ImportIndex(self.cache, root, self.exports)
        return self._indexes[root].facts(path, self._data, compute)

    def _summaries(
        self, paths: dict[str, str], known: list[FileResult], words: frozenset[str], *, named_only: bool = False
    ) -> list[FileResult]:
        """The summaries of ``paths`` (real path -> path), those that name none of ``words`` only
        when the prefilter keeps them and not ``named_only`` (imported files: one that names no
        candidate's symbol neither calls nor re-exports it); then of the rest that name their
        aliases and their classes' bases (``related_names``), and so on, ``_RELATED_DEPTH`` rounds
        at most."""
        others: list[FileResult] = []
        seen = set(words)
        for _ in range(_RELATED_DEPTH):  # then the files naming the symbols' aliases and their classes' bases
            found = _lint(
                ((path, self._data(path) or b"") for path in paths.values()),
                self.resolver,
                jobs=self.jobs,
                cache=self.cache,
                words=words,
                named_only=named_only,
            )
            found = [_for_project(r) for r in found if r.summary is not None]
            others += found
            words = (
                frozenset(name for r in [*known, *found] if r.summary for name in r.summary.related_names(words)) - seen
            )
            if not words:
                break
            seen |= words
            summarized = {self._real(r.path) for r in others}
            paths = {real: path for real, path in paths.items() if real not in summarized}
        return others

    def _in_project(self, root: str, group: list[FileResult]) -> bool:
        """Every file of ``group`` is one a run on ``root`` would lint."""
        files = self._files.setdefault(root, ProjectFiles(root, self.resolver))
        return all(files.contains(self._real(r.path)) for r in group)

    def _data(self, path: str) -> bytes | None:
        """A file's bytes (its unsaved text's); None when it cannot be read."""
        text = self.unsaved.get(self._real(path))
        if text is not None:
            return text.encode("utf-8")
        data = _read(path)
        return data if isinstance(data, bytes) else None

    def _admit(self, finding: Finding) -> bool:
        """A finding the project phase moved to a linted file's call: the file's configuration
        selects its rule and no ``# noqa`` there suppresses it."""
        if finding.code not in self.resolver(finding.path).codes_for(finding.path):
            return False
        if self.ignore_noqa:
            return True
        return not self._suppressions(finding.path).suppresses(finding.code, finding.start.row)

    def _suppressions(self, path: str) -> Suppressions:
        """The ``# noqa`` comments of ``path`` as it is now: read and parsed once per file of a pass
        (``__call__`` forgets them, since a buffer may change between calls)."""
        from remat_lint.output.noqa import Suppressions

        real = self._real(path)
        if real not in self._noqa:
            data = self._data(path)
            source = decode_source(path, data) if data is not None else None
            self._noqa[real] = Suppressions.parse(source.text if isinstance(source, SourceFile) else "")
        return self._noqa[real]


def _for_project(result: FileResult) -> FileResult:
    """What the project phase needs of a file that was not linted: its summary, facts and
    candidates (a rule may report at a linted file's call from there); never its findings."""
    return FileResult(result.path, facts=result.facts, summary=result.summary, candidates=result.candidates)


def project_root(resolver: Resolver, linted: Iterable[str]) -> str | None:
    """The folder of the project's outermost configuration above the linted files (a configuration
    nested inside it only chooses rules: resolver.py); without one, the nearest folder
    above the linted files that holds a pyproject.toml, .git or .hg (black's project root:
    pre-commit runs at the top of a git checkout, whose pyproject.toml rarely configures us).
    ``linted``: absolute paths."""
    common = os.path.commonpath([os.path.dirname(path) for path in linted])
    settings = resolver.in_folder(common)
    if settings.config_file is not None:
        return os.path.abspath(settings.project_root or settings.root)
    for directory in (Path(common), *Path(common).parents):
        if any(os.path.exists(os.path.join(directory, marker)) for marker in PROJECT_MARKERS):
            return str(directory)
    return None


def _lint_tasks(tasks: list[_Task], jobs: int) -> list[tuple[_Task, FileResult]]:
    if not tasks:
        return []
    import remat_lint.engine.lint  # noqa: F401 -- libcst and the rules, imported once before the workers fork

    if min(jobs, len(tasks)) <= 1 or _lines(tasks) < POOL_MIN_LINES:
        return _lint_in_process(tasks)
    workers = _Workers(min(jobs, len(tasks)))
    try:
        for task in sorted(tasks, key=lambda t: -len(t.text)):
            workers.submit(task)
        return workers.run(tasks)
    finally:
        workers.close()


def _lint_in_process(tasks: list[_Task]) -> list[tuple[_Task, FileResult]]:
    """Here, but a file of ``ISOLATE_MIN_CHARS`` or more in one spawned process, started only for
    such a file, so that a parser crash on it costs that file alone."""
    if os.name != "posix" or all(len(task.text) < ISOLATE_MIN_CHARS for task in tasks):  # pass_fds: POSIX
        return [(task, _lint_task(task)) for task in tasks]
    # imported here: subprocess and multiprocessing cost a run that parses nothing (a warm one) 5 %
    from remat_lint.engine.spawned_worker import SpawnedWorker

    with SpawnedWorker() as apart:
        apart.start()  # it imports the engine while this process lints the small files
        small = {task.index: _lint_task(task) for task in tasks if len(task.text) < ISOLATE_MIN_CHARS}
        return [(task, small[task.index] if task.index in small else apart.lint(task)) for task in tasks]


def _lines(tasks: list[_Task]) -> int:
    return sum(task.text.count("\n") for task in tasks)


_FORK = sys.platform == "linux"  # workers are forked: they inherit the modules imported and the settings


class _Workers:
    """Worker processes fed by a supervisor. The supervisor imports the engine (libcst and the
    rules) as soon as it starts, while the main process may still be reading files, then forks the
    workers, which inherit the import (a pool forked from the main process would wait for the main
    process's import, or import it in every worker). Tasks submitted before the workers are ready
    are sent largest first, so that the workers end together; later ones at once, so that the
    workers lint while the main process reads (on a large tree).

    Each worker has a pipe of its own to the supervisor, which hands it one task at a time: no lock
    is shared between workers, so one killed at any moment (for memory, an abort in the parser, or
    while it waits for a task) blocks no other. The file it was on gets a REM000, another worker
    takes its place, and every other file gets its result."""

    def __init__(self, jobs: int) -> None:
        import multiprocessing

        self.jobs = jobs
        context = multiprocessing.get_context("fork" if _FORK else None)
        tasks, self._tasks = context.Pipe(duplex=False)  # the tasks, then None; the supervisor alone reads
        self._results = context.Queue()  # (task index, pickled result or why its worker died): from the supervisor
        self._ready = context.Event()  # the engine is imported, the workers forked
        self._first = context.Process(target=_supervise, args=(tasks, self._results, self._ready, jobs))
        self._first.start()
        tasks.close()  # the supervisor's end: if it dies, sending raises instead of blocking
        self._waiting: list[_Task] = []
        self._stopped = False

    def submit(self, task: _Task) -> None:
        self._waiting.append(task)
        if self._ready.is_set():
            self._send()

    def run(self, tasks: list[_Task]) -> list[tuple[_Task, FileResult]]:
        """The results of ``tasks``, all submitted."""
        import pickle
        import queue

        self._send()
        self._stop()
        done: dict[int, FileResult] = {}
        paths = {task.index: task.path for task in tasks}
        ended = False  # the supervisor: what it wrote is in the pipe
        while len(done) < len(tasks):
            try:
                index, result = self._results.get(timeout=1)
            except queue.Empty:
                if ended:  # the supervisor itself died: this process lints what is left
                    done.update((task.index, _lint_task(task)) for task in tasks if task.index not in done)
                ended = not self._first.is_alive()
                continue
            if isinstance(result, str):  # its worker died on it
                result = FileResult(paths[index], findings=[diagnostic(paths[index], result)])
            done[index] = pickle.loads(result) if isinstance(result, bytes) else result
        return [(task, done[task.index]) for task in tasks]

    def _send(self) -> None:
        with contextlib.suppress(OSError):  # the supervisor died: run() lints the tasks left
            for task in sorted(self._waiting, key=lambda t: -len(t.text)):
                self._tasks.send(task)
        self._waiting.clear()

    def _stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            with contextlib.suppress(OSError):
                self._tasks.send(None)

    def close(self) -> None:
        import queue

        self._stop()  # when the main process failed while reading: no more task will come
        self._first.join(0.05)
        while self._first.is_alive():  # and read what it still sends: it cannot end with results in the pipe
            with contextlib.suppress(queue.Empty):
                while True:
                    self._results.get_nowait()
            self._first.join(0.05)
        self._tasks.close()


@dataclass
class _Worker:
    """The supervisor's view of one worker: its process, its end of their pipe, its task."""

    process: Any
    conn: Connection
    task: _Task | None = None  # sent, not answered


def _supervise(tasks: Connection, results: Queue[Any], ready: Event, jobs: int) -> None:
    """Imports the engine, forks the workers and hands them the tasks one at a time; a worker that
    dies leaves a REM000 for the file it was on, and another takes its place."""
    import collections
    import multiprocessing
    from multiprocessing.connection import wait

    import remat_lint.engine.lint  # noqa: F401 -- what the workers inherit
    from remat_lint.engine.spawned_worker import died_message

    context = multiprocessing.get_context("fork" if _FORK else None)

    def start() -> _Worker:
        ours, theirs = context.Pipe()
        process = context.Process(target=_work, args=(theirs,))
        process.start()
        theirs.close()  # its death then closes the pipe: reading it raises instead of waiting
        return _Worker(process, ours)

    workers = [start() for _ in range(jobs)]
    ready.set()
    pending: collections.deque[_Task] = collections.deque()
    more = True  # tasks may still come
    while more or pending or any(worker.task for worker in workers):
        for worker in workers:
            # One task at a time: a worker gets the next once its result is read. A second sent ahead
            # could deadlock the pair on their pipe, each blocked sending a large message (a file's
            # text, a result) to the other while neither reads.
            if worker.task is None and pending:
                worker.task = pending.popleft()
                with contextlib.suppress(OSError):  # it died: reading its pipe tells
                    worker.conn.send(worker.task)
        for source in wait([tasks, *(worker.conn for worker in workers)] if more else [w.conn for w in workers]):
            if source is tasks:
                try:
                    task = tasks.recv()
                except (EOFError, OSError):  # the main process is gone
                    task = None
                if task is None:
                    more = False
                else:
                    pending.append(task)
                continue
            worker = next(worker for worker in workers if worker.conn is source)
            try:  # a result is passed on as the worker pickled it
                results.put((worker.task.index if worker.task else -1, worker.conn.recv_bytes()))
                worker.task = None
            except (EOFError, OSError):  # it died, on its task if it had one
                worker.process.join()
                if worker.task is not None:
                    results.put((worker.task.index, died_message(worker.process.exitcode)))
                worker.conn.close()
                workers[workers.index(worker)] = start()
    for worker in workers:
        with contextlib.suppress(OSError):
            worker.conn.send(None)
        worker.process.join()


def _work(conn: Connection) -> None:
    for task in iter(conn.recv, None):
        conn.send(_lint_task(task))


def _lint_task(task: _Task) -> FileResult:
    from remat_lint.engine.lint import lint_source

    try:
        return lint_source(
            task.path,
            task.text,
            task.codes,
            facts=task.facts,
            is_test_file=task.is_test_file,
            words=task.words,
            defer_project=True,
        )
    except MemoryError:  # the file, not the run: the others are still linted
        return FileResult(
            task.path, findings=[diagnostic(task.path, "out of memory while linting this file: not linted")]
        )


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
