"""Where a configuration value comes from (analysis/config_values.py), seen through REM001 on a
policy that is always a string: argparse options named every way argparse names them, and
ConfigDict fields written on the config that is returned, not on another one."""

from __future__ import annotations

import pytest

from tests.analysis.test_values import PRELUDE
from tests.helpers import codes

PARSED = "ap = argparse.ArgumentParser()\n{option}\na = ap.parse_args()\ng = jax.checkpoint(f, policy=a.{attr})"


@pytest.mark.parametrize(
    ("option", "attr"),
    [
        ("ap.add_argument('policy', default='dots_saveable')", "policy"),  # a positional is required: always a str
        ("ap.add_argument('-p', dest='policy', default='dots_saveable')", "policy"),
        ("ap.add_argument('-p', '--remat-policy', default='dots_saveable')", "remat_policy"),
    ],
    ids=["positional", "dest", "long-option-with-dashes"],
)
def test_an_argparse_option_that_is_always_a_string_is_reported(option, attr):
    assert codes(PRELUDE + PARSED.format(option=option, attr=attr), select={"REM001"}) == ["REM001"]


CONFIG_DICTS = """\
import ml_collections
def get_config():
    c = ml_collections.ConfigDict()
    d = ml_collections.ConfigDict()
    {written}.p = 'dots_saveable'
    return c
g = jax.checkpoint(f, policy=get_config().p)
"""


@pytest.mark.parametrize(("written", "expected"), [("c", ["REM001"]), ("d", [])])
def test_a_config_dict_field_counts_only_when_written_on_the_returned_config(written, expected):
    assert codes(PRELUDE + CONFIG_DICTS.format(written=written), select={"REM001"}) == expected


def test_an_absl_flag_whose_default_is_passed_in_keyword_arguments_is_unknown():
    source = "OPTS = {'default': 'dots_saveable', 'help': 'h'}\nflags.DEFINE_string('p', **OPTS)\n"
    assert codes(PRELUDE + source + "g = jax.checkpoint(f, policy=flags.FLAGS.p)") == []


MODULE_FIELDS = """\
import flax.linen as nn


@dataclasses.dataclass
class C:
    p: str = "dots_saveable"


class M(nn.Module):
{fields}

    def __call__(self, x):
        return jax.checkpoint(f, policy=self.config.p)(x)
"""


@pytest.mark.parametrize(
    "fields", ["    config: C", "    dtype: str\n    config: C", '    """A block."""\n    config: C']
)
def test_a_module_field_is_read_through_its_own_annotation_wherever_it_is_declared(fields):
    assert codes(PRELUDE + MODULE_FIELDS.format(fields=fields), select={"REM001"}) == ["REM001"]


@pytest.mark.parametrize(("default", "expected"), [("'dots_saveable'", ["REM001"]), ("pick()", []), (None, [])])
def test_a_config_class_attribute_is_a_string_only_when_its_default_is(default, expected):
    field = f"    p: object = {default}" if default else "    p: object"
    source = f"@dataclasses.dataclass\nclass C:\n{field}\ng = jax.checkpoint(f, policy=C.p)"
    assert codes(PRELUDE + source) == expected
