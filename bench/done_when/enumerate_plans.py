"""Every plan --memory-budget could choose for p4_policy_registry or p5_names, compiled as it compiles
them: per site as written, no checkpoint, the four standard policies and save_only_these_names of
every subset of the names in its body. Prints the cheapest plans under 0.5 and 0.8 of the
no-checkpoint peak temp, and where a given plan stands against the best at 0.5.

    python bench/done_when/enumerate_plans.py p5_names dots_with_no_batch_dims_saveable none
"""

import itertools
import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_disable_hlo_passes=cse_barrier_expander"  # as the workers compile

import jax
import jax.numpy as jnp

from remat_lint.trace.worker import costs
from remat_lint.trace.worker.budget import declared_names
from remat_lint.trace.worker.jaxpr_rewrite import Edit
from remat_lint.trace.worker.jaxpr_sites import POLICIES

S = jax.ShapeDtypeStruct


def program(project: str) -> costs.Program:
    """The program the project's test differentiates, at its shapes."""
    sys.path.insert(0, str(Path(__file__).parent / project))
    if project == "p4_policy_registry":
        from stack.model import CONFIG, init, loss

        params = jax.eval_shape(lambda: init(jax.random.key(0), CONFIG["width"], CONFIG["depth"]))
        x = S((CONFIG["batch"], CONFIG["width"]), jnp.float32)
    else:
        from names.model import init, loss

        params = jax.eval_shape(lambda: init(jax.random.key(0), 32, 2))
        x = S((16, 32), jnp.float32)
    return costs.Program.trace(lambda p, *, x: loss(p, x), (params,), {"x": x}, (0,))


def candidates(site) -> dict[str, Edit | None]:
    standard = {"as written": None, "none": Edit(inline=True)}
    standard |= {name: Edit(params={"policy": policy}) for name, policy in POLICIES.items()}
    names = declared_names(site)
    subsets = [c for r in range(1, len(names) + 1) for c in itertools.combinations(names, r)]
    save = jax.checkpoint_policies.save_only_these_names
    return standard | {f"names{c}": Edit(params={"policy": save(*c)}) for c in subsets}


def main() -> None:
    prog = program(sys.argv[1])
    per_site = [candidates(site) for site in prog.sites]
    rows = []
    for plan in itertools.product(*per_site):
        edits = {}
        for site, name, options in zip(prog.sites, plan, per_site, strict=True):
            if options[name] is not None:
                edits |= costs.edits_for([site], options[name])
        measured = prog.costs(edits)
        rows.append((plan, measured.temp_bytes, measured.flops))
    none = prog.costs(costs.edits_for(prog.sites, Edit(inline=True)))
    print("sites:", [s.function for s in prog.sites], "no checkpoint:", none, f"{len(rows)} plans")
    best = {}
    for fraction in (0.5, 0.8):
        fits = sorted((flops, temp, plan) for plan, temp, flops in rows if temp <= fraction * none.temp_bytes)
        best[fraction] = fits[0][0]
        print(f"budget {fraction}: {fraction * none.temp_bytes / 1024:.1f} KiB; {len(fits)} plans fit; cheapest:")
        for flops, temp, plan in fits[:2]:
            print(f"   {flops:.4e} FLOPs  {temp / 1024:.1f} KiB  {plan}")
    for plan, temp, flops in rows:
        if list(plan) == sys.argv[2:]:
            print(
                f"given {plan}: {flops:.4e} FLOPs, {temp / 1024:.1f} KiB: {100 * (flops / best[0.5] - 1):+.2f}% vs best at 0.5"
            )


if __name__ == "__main__":
    main()
