"""pytest plugin for mutation runs (``[tool.mutmut]`` in pyproject.toml loads it with ``-p``): credits
the code a shared fixture (session, package, module or class scope) runs to every test that uses it.

mutmut runs on each mutant only the tests that called the mutated function while it collected
stats, and it credits a call to the test being set up or run at that moment. The snapshot and
fixture tests share session fixtures that lint every fixture once (tests/fixture_runs.py), and
many test modules trace or lint once per module; without this plugin, all that work is credited to
the first test that asked for it, and a mutant that changes what another test checks would run
only that first test and survive.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

# (fixture name, the node id prefix it is visible under) -> the functions its setup called
_called_by_fixture: dict[tuple[str, str], set[str]] = {}


def _stats() -> set[str] | None:
    """mutmut's set of functions called since the last test ended, while it collects stats."""
    try:
        from mutmut.state import state
    except ImportError:
        return None
    return state()._stats


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Generator[None, None, None]:
    stats = _stats()
    if fixturedef.scope == "function" or stats is None:
        yield
        return
    before = set(stats)
    stats.clear()
    yield
    _called_by_fixture.setdefault((fixturedef.argname, fixturedef.baseid), set()).update(stats)
    stats |= before


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    stats = _stats()
    if stats is None:
        return
    for (name, baseid), called in _called_by_fixture.items():
        if name in item.fixturenames and item.nodeid.startswith(baseid):
            stats |= called
