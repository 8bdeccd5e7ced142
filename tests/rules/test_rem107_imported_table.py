"""REM107 on a table of another module of the project (``from .policies import TABLE``): the
guard is reported in the module that guards, naming the table's module, when the table is a dict
literal that maps "full" to None and no module changes it in place."""

from __future__ import annotations

import pytest

from tests.project_messages import project_messages

POLICIES = 'from jax import checkpoint_policies as cp\n\nTABLE = {"full": None, "dots": cp.dots_saveable}\n'


def _model(lookup: str = "TABLE.get(setting)", extra: str = "") -> str:
    return (
        "import jax\n\nfrom .policies import TABLE\n"
        f"{extra}\n\ndef build(f, setting):\n    policy = {lookup}\n"
        "    if policy is not None:\n        return jax.checkpoint(f, policy=policy)\n    return f\n"
    )


def _found(tmp_path, capsys, monkeypatch, model: str, policies: str = POLICIES, **more: str):
    files = {"pkg/__init__.py": "", "pkg/policies.py": policies, "pkg/model.py": model, **more}
    return project_messages(tmp_path, capsys, monkeypatch, files, "REM107")


@pytest.mark.parametrize("lookup", ["TABLE.get(setting)", "TABLE[setting]", 'TABLE["full"]'])
def test_a_table_mapping_full_to_none_is_reported_at_the_guard(tmp_path, capsys, monkeypatch, lookup) -> None:
    ((path, row, message),) = _found(tmp_path, capsys, monkeypatch, _model(lookup))
    assert (path, row) == ("pkg/model.py", 8)
    assert message.startswith(
        'REM107 The guard `policy is not None` skips the checkpoint for the setting "full", which `TABLE` '
        "(policies.py) maps to None"
    )


@pytest.mark.parametrize(
    ("model", "policies", "more"),
    [
        (_model('TABLE["dots"]'), POLICIES, {}),  # the lookup asks for another setting
        (_model(), POLICIES.replace('"full": None', '"full": cp.nothing_saveable, "none": None'), {}),
        (_model(), POLICIES + 'TABLE["full"] = cp.nothing_saveable\n', {}),  # changed in its module
        (_model(extra='TABLE["full"] = jax.checkpoint_policies.nothing_saveable'), POLICIES, {}),  # or here
        (_model(), POLICIES, {"pkg/fix.py": "from .policies import TABLE\n\nTABLE.update(full=0)\n"}),  # or elsewhere
        (_model(), "TABLE = make_table()\n", {}),  # no dict literal
    ],
)
def test_a_table_that_may_not_map_full_to_none_is_not_reported(tmp_path, capsys, monkeypatch, model, policies, more):
    assert _found(tmp_path, capsys, monkeypatch, model, policies, **more) == []
