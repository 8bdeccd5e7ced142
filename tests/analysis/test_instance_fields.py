"""A config field read through a parameter annotated with its class (``def build(cfg: Config)``,
``policy=cfg.policy``): any instance may hold another value, so the rules judge it only when every
construction of the class in the project leaves the field at values they judge (its default
where a construction does not set it); a ``Literal[...]`` or ``str`` annotation bounds it too
(project/fields.py ``instance_values``)."""

from __future__ import annotations

import pytest

from tests.helpers import lint
from tests.project_messages import project_messages

CONFIG = """\
import dataclasses
from typing import Callable, Optional

from jax import checkpoint_policies as cp


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "block"
    remat_policy: Optional[str] = "nothing_saveable"
    keep: Callable = cp.everything_saveable
    factory: Callable = cp.save_only_these_names
"""

BUILD = """\
import jax

from pkg.config import Config


def block(x):
    return x


def build(cfg: Config):
    a = jax.checkpoint(block, policy=cfg.remat_policy)
    b = jax.checkpoint(block, policy=cfg.keep)
    c = jax.checkpoint(block, policy=cfg.factory)
    return a, b, c
"""

FOUND = [("pkg/build.py", 11, "REM001"), ("pkg/build.py", 12, "REM104"), ("pkg/build.py", 13, "REM003")]


def _found(tmp_path, capsys, monkeypatch, train: str, **more: str) -> list[tuple[str, int, str]]:
    files = {"pkg/__init__.py": "", "pkg/config.py": CONFIG, "pkg/build.py": BUILD, "pkg/train.py": train, **more}
    messages = project_messages(tmp_path, capsys, monkeypatch, files, "REM001", "REM003", "REM104")
    return sorted((path, row, message.split()[0]) for path, row, message in messages)


TRAIN = "from pkg.build import build\nfrom pkg.config import Config\n\nF = build({})\n"


def test_every_construction_leaving_the_defaults_is_judged(tmp_path, capsys, monkeypatch) -> None:
    found = _found(tmp_path, capsys, monkeypatch, TRAIN.format("Config(name='x')"))
    assert found == sorted(FOUND)


def test_the_message_names_the_module_of_the_class(tmp_path, capsys, monkeypatch) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/config.py": CONFIG,
        "pkg/build.py": BUILD,
        "pkg/train.py": TRAIN.format("Config()"),
    }
    messages = project_messages(tmp_path, capsys, monkeypatch, files, "REM001")
    assert messages == [
        (
            "pkg/build.py",
            11,
            "REM001 `policy=cfg.remat_policy` (from config.py) is a string, not a policy. JAX accepts it when "
            "wrapping and raises `TypeError: 'str' object is not callable` at the first grad/vjp",
        )
    ]


@pytest.mark.parametrize(
    "construction",
    [
        "Config(remat_policy=None, keep=cp.dots_saveable, factory=cp.dots_saveable)",  # set by keyword
        "Config('x', None, cp.dots_saveable, cp.dots_saveable)",  # by position
        "Config(**settings)",
        "dataclasses.replace(Config(), remat_policy=None, keep=POLICY, factory=POLICY)",
    ],
)
def test_a_construction_that_may_set_the_field_silences_it(tmp_path, capsys, monkeypatch, construction) -> None:
    train = "import dataclasses\nfrom jax import checkpoint_policies as cp\n" + TRAIN.format(construction)
    assert _found(tmp_path, capsys, monkeypatch, train) == []


def test_a_copy_in_a_module_that_never_names_the_class_counts(tmp_path, capsys, monkeypatch) -> None:
    copy = "import dataclasses\n\n\ndef tweak(cfg):\n    return dataclasses.replace(cfg, remat_policy=None)\n"
    found = _found(tmp_path, capsys, monkeypatch, TRAIN.format("Config()"), **{"pkg/tweak.py": copy})
    assert [row for _, row, _ in found] == [12, 13]  # the other two fields are still left at their defaults


def test_no_construction_in_the_project_is_unknown(tmp_path, capsys, monkeypatch) -> None:
    assert _found(tmp_path, capsys, monkeypatch, "from pkg.config import Config\n\nF: Config\n") == []


def test_a_subclass_may_change_the_default(tmp_path, capsys, monkeypatch) -> None:
    sub = "from pkg.config import Config\n\n\nclass Other(Config):\n    remat_policy: str = 'dots'\n"
    assert _found(tmp_path, capsys, monkeypatch, TRAIN.format("Config()"), **{"pkg/sub.py": sub}) == []


SAME_MODULE = """\
import dataclasses
from typing import Optional
import jax


@dataclasses.dataclass
class Config:
    remat_policy: Optional[str] = "nothing_saveable"


def build(cfg: Config):
    return jax.checkpoint(lambda x: x, policy=cfg.remat_policy)


F = build(Config())
"""


def test_a_class_of_the_same_module_linted_alone() -> None:
    assert [(f.code, f.start.row) for f in lint(SAME_MODULE, {"REM001"})] == [("REM001", 12)]


@pytest.mark.parametrize(
    "change",
    [
        ("F = build(Config())", "F = build(Config(remat_policy=None))"),
        ("F = build(Config())", "F = build(make(Config))"),  # passed on
        ("F = build(Config())", "F = None"),  # never constructed here
        ("    return jax", "    cfg.remat_policy = None\n    return jax"),  # assigned
    ],
)
def test_a_class_of_the_same_module_that_may_hold_another_value(change: tuple[str, str]) -> None:
    assert lint(SAME_MODULE.replace(*change), {"REM001"}) == []
