"""pytest plugin for mutation runs (``[tool.mutmut]`` in pyproject.toml loads it with ``-p``): credits
the code a session fixture runs to every test that uses the fixture.

mutmut runs on each mutant only the tests that called the mutated function while it collected
stats, and it credits a call to the test being set up or run at that moment. The snapshot and
fixture tests share session fixtures that lint every fixture once (tests/fixture_runs.py); without
this plugin, all that linting is credited to the first test that asked for it, and a mutant that
changes another fixture's findings would run only that one test and survive.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

# The session fixtures whose code every test using them is credited with.
_CREDITED = ("cli_results", "cli_diffs")
_called_by_fixture: dict[str, set[str]] = {}


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
    if fixturedef.argname not in _CREDITED or stats is None:
        yield
        return
    before = set(stats)
    stats.clear()
    yield
    _called_by_fixture[fixturedef.argname] = set(stats)
    stats |= before


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    stats = _stats()
    if stats is not None:
        for name in _CREDITED:
            if name in item.fixturenames:
                stats |= _called_by_fixture.get(name, set())
