"""A string built by ``+`` from known strings is known (analysis/values.py): a checkpoint name
spelled ``PREFIX + "_out"`` is the name a policy's typo is compared with."""

from __future__ import annotations

from tests.helpers import lint

SOURCE = """\
import jax
from jax.ad_checkpoint import checkpoint_name

PREFIX = "attn"

def layer(x):
    return checkpoint_name(x, PREFIX + "_out")

policy = jax.checkpoint_policies.save_only_these_names("attn_outt")
"""


def test_a_name_concatenated_from_constants_is_suggested_for_a_policys_typo():
    [finding] = lint(SOURCE)
    assert (finding.code, finding.start.row) == ("REM008", 9)
    assert finding.message.startswith(
        "`save_only_these_names` is given 'attn_outt', but no `checkpoint_name(x, 'attn_outt')` in the linted files "
        "declares it; did you mean 'attn_out'? "
    )
