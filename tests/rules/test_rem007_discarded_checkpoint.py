"""REM007 on a discarded remat call after other sites, and on Haiku's late argument check."""

from tests.helpers import lint


def test_a_discarded_call_after_an_assigned_one_and_a_guarded_one_is_reported() -> None:
    source = (
        "import jax\ng = jax.checkpoint(f)\n"
        "try:\n    jax.checkpoint(g)\nexcept ValueError:\n    pass\n"
        "jax.checkpoint(h)\n"
    )
    (finding,) = lint(source, {"REM007"})
    assert finding.start.row == 7
    assert "leaves `h` unchanged" in finding.message


def test_a_discarded_hk_remat_with_an_unknown_keyword_is_still_reported() -> None:
    # Haiku 0.0.x checks the keywords only when the result is called: `hk.remat(layer, bad_keyword=1)`
    # returns inside `hk.transform` (checked), so the discarded result is a bug too, beside REM002's.
    source = "import haiku as hk\ndef forward(x):\n    hk.remat(layer, bad_keyword=1)\n    return layer(x)\n"
    assert sorted(f.code for f in lint(source, {"REM002", "REM007"})) == ["REM002", "REM007"]


# Found by mutation testing: no other test pinned the message.
def test_rem007_names_the_function_left_unchanged_or_says_its_argument() -> None:
    [spread] = lint("import jax\nfs = [f]\njax.checkpoint(*fs)\n", {"REM007"})
    [named] = lint("import jax\njax.checkpoint(fun=f)\n", {"REM007"})
    tail = "unchanged, so nothing is checkpointed; assign the result and use it, or apply it as a decorator"
    assert (
        spread.message
        == f"The result of `jax.checkpoint` is discarded. It returns a checkpointed version and leaves its argument {tail}"
    )
    assert (
        named.message
        == f"The result of `jax.checkpoint` is discarded. It returns a checkpointed version and leaves `f` {tail}"
    )
