"""REM008 (unknown checkpoint name): cases found by mutation testing that no other test pinned."""

from __future__ import annotations

from tests.helpers import lint


def test_unknown_names_from_one_sequence_are_reported_together_each_with_its_closest_name() -> None:
    source = """
    import jax
    from jax.ad_checkpoint import checkpoint_name
    def mlp(x):
        return checkpoint_name(checkpoint_name(x, "mlp_out"), "attn_out")
    NAMES = ("mlp_outt", "attn_outt")
    policy = jax.checkpoint_policies.save_only_these_names(*NAMES)
    """
    [finding] = lint(source, {"REM008"})
    assert finding.message.startswith(
        "`save_only_these_names` is given 'mlp_outt', 'attn_outt' (from `NAMES`), but no `checkpoint_name(x, "
        "'mlp_outt')` in the linted files declares these; did you mean 'mlp_out' for 'mlp_outt'; did you mean "
        "'attn_out' for 'attn_outt'? JAX matches names exactly and never warns"
    )
