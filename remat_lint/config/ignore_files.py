"""What ``.ignore``, ``.gitignore`` and ``.git/info/exclude`` ignore while walking, as ruff skips it
(``respect-gitignore``; measured with ruff 0.17.6): ``.ignore`` files everywhere, ``.gitignore``
and ``.git/info/exclude`` only inside a git checkout (a folder with ``.git`` at or above it). A
deeper file wins over a shallower one, ``.ignore`` over ``.gitignore`` over ``.git/info/exclude``,
and in one file the last matching line (``!`` re-includes). A path named on the command line is
not matched here: it is linted, as in ruff (even with --force-exclude). Patterns are gitignore's,
read by ``pathspec``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

_Rules = tuple[tuple[str, "GitIgnoreSpec"], ...]  # (the folder an ignore file is in, its patterns), strongest first


class IgnoreFiles:
    def __init__(self) -> None:
        self._by_folder: dict[str, tuple[_Rules, bool]] = {}

    def ignored_in(self, folder: str, names: Collection[str] | None = None) -> Callable[[str, bool], bool]:
        """Whether an entry of ``folder`` (by name; ``is_dir``: a folder) is ignored; ``names``: the
        folder's entries when the caller listed them (then no ignore file is looked for in vain:
        a third of discovery's time). A walk never enters an ignored folder, so one that is
        ignored was named on the command line: as ruff does, everything in it is linted."""
        folder = os.path.abspath(folder)
        parent = os.path.dirname(folder)
        if parent != folder and _matched(self._rules(parent)[0], folder, True):
            return _nothing
        rules, _ = self._rules(folder, names)
        if not rules:
            return _nothing
        return lambda name, is_dir: _matched(rules, os.path.join(folder, name), is_dir)

    def _rules(self, folder: str, names: Collection[str] | None = None) -> tuple[_Rules, bool]:
        """The rules that apply in ``folder``, and whether it lies in a git checkout."""
        known = self._by_folder.get(folder)
        if known is not None:
            return known
        parent = os.path.dirname(folder)
        above, in_git = self._rules(parent) if parent != folder else ((), False)
        git_root = ".git" in names if names is not None else os.path.exists(os.path.join(folder, ".git"))
        candidates = [".ignore", *([".gitignore"] if in_git or git_root else [])]
        present = [os.path.join(folder, name) for name in candidates if names is None or name in names]
        if git_root:
            present.append(_exclude_file(folder))
        own = tuple((folder, spec) for path in present if (spec := _read(path)) is not None)
        self._by_folder[folder] = (own + above, in_git or git_root)
        return self._by_folder[folder]


def _exclude_file(checkout: str) -> str:
    """``.git/info/exclude``; in a linked worktree (``.git`` is a file naming its git dir) that of
    the repository it shares, where git reads it."""
    dot_git = os.path.join(checkout, ".git")
    try:
        with open(dot_git, encoding="utf-8") as handle:
            git_dir = os.path.join(checkout, handle.read().partition("gitdir:")[2].strip())
    except OSError:  # a folder: the usual checkout
        return os.path.join(dot_git, "info", "exclude")
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            git_dir = os.path.join(git_dir, handle.read().strip())
    except OSError:  # a submodule's git dir is its own
        pass
    return os.path.join(git_dir, "info", "exclude")


def _matched(rules: _Rules, path: str, is_dir: bool) -> bool:
    for base, spec in rules:
        relative = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
        include = spec.check_file(relative).include
        if include is not None:
            return include
    return False


def _nothing(name: str, is_dir: bool) -> bool:
    return False


def _read(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:  # absent (the usual case), unreadable, or a folder
        return None
    from pathspec import GitIgnoreSpec  # here: ~30 ms that a tree without ignore files never pays

    try:
        return GitIgnoreSpec.from_lines(lines)
    except ValueError:  # git skips a line it cannot read (a lone `!` or `\`); so do we
        return GitIgnoreSpec.from_lines([line for line in lines if _valid(line)])


def _valid(line: str) -> bool:
    from pathspec import GitIgnoreSpec

    try:
        GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True
