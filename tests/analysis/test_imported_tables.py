"""An entry of a dict literal imported from another module of the project (``from .config import
POLICIES``, then ``policy=POLICIES["x"]``): the project reads the table in its module
(``ModuleSummary.tables``), when no module changes it in place."""

from __future__ import annotations

import pytest

from tests.project_messages import project_messages

CONFIG = """\
from jax import checkpoint_policies as cp

POLICIES = {"full": "nothing_saveable", "dots": "dots_saveable"}
MIXED = {"full": cp.nothing_saveable, "dots": "dots_saveable"}
"""


def _model(policy: str, extra: str = "") -> str:
    return f"import jax\n\nfrom .config import MIXED, POLICIES\n{extra}\n\ndef build(name, f):\n    return jax.checkpoint(f, policy={policy})\n"


def _found(tmp_path, capsys, monkeypatch, model: str, **more: str) -> list[tuple[str, int, str]]:
    files = {"pkg/__init__.py": "", "pkg/config.py": CONFIG, "pkg/model.py": model, **more}
    return project_messages(tmp_path, capsys, monkeypatch, files, "REM001")


@pytest.mark.parametrize("policy", ['POLICIES["dots"]', "POLICIES[name]", 'MIXED["dots"]', 'POLICIES.get(name, "x")'])
def test_an_entry_that_is_a_string_is_reported(tmp_path, capsys, monkeypatch, policy: str) -> None:
    ((path, row, message),) = _found(tmp_path, capsys, monkeypatch, _model(policy))
    assert (path, row) == ("pkg/model.py", 7)
    assert message.startswith(f"REM001 `policy={policy}` (from config.py) is a string, not a policy")


@pytest.mark.parametrize(
    "policy",
    [
        'MIXED["full"]',  # a policy
        "MIXED[name]",  # any entry: one is a policy
        'POLICIES["other"]',  # KeyError: not this rule's
        "POLICIES.get(name)",  # may be None
        "POLICIES.get(name, jax.checkpoint_policies.dots_saveable)",
    ],
)
def test_an_entry_that_may_be_a_policy_is_not_reported(tmp_path, capsys, monkeypatch, policy: str) -> None:
    assert _found(tmp_path, capsys, monkeypatch, _model(policy)) == []


@pytest.mark.parametrize(
    ("extra", "more"),
    [
        ('POLICIES["dots"] = jax.checkpoint_policies.dots_saveable', {}),  # changed here
        ("", {"pkg/setup.py": "from .config import POLICIES\n\nPOLICIES.update(dots=None)\n"}),  # or elsewhere
        ("", {"pkg/config.py": CONFIG + 'POLICIES["dots"] = cp.dots_saveable\n'}),  # or in its module
    ],
)
def test_a_table_changed_in_place_is_unknown(tmp_path, capsys, monkeypatch, extra: str, more: dict[str, str]) -> None:
    assert _found(tmp_path, capsys, monkeypatch, _model('POLICIES["dots"]', extra), **more) == []


def test_a_table_keyed_by_a_tuple_holding_a_function_is_read_with_that_key_unknown(tmp_path, capsys, monkeypatch):
    """Such a key is no plain data: the module's summary crashed the run on it (``TypeError``)."""
    config = "def f(x):\n    return x\n\n\nPOLICIES = {(1, f): 'dots_saveable'}\n"
    model = "import jax\n\nfrom .config import POLICIES\n\n\ndef build(name, f):\n    return jax.checkpoint(f, policy=POLICIES[name])\n"
    files = {"pkg/__init__.py": "", "pkg/config.py": config, "pkg/model.py": model}
    ((path, row, message),) = project_messages(tmp_path, capsys, monkeypatch, files, "REM001")
    assert (path, row) == ("pkg/model.py", 7)
    assert message.startswith("REM001 `policy=POLICIES[name]` (from config.py) is a string, not a policy")
