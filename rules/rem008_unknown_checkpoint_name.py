from __future__ import annotations

import difflib
import os
import re
from typing import TYPE_CHECKING, Any

from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.project.summary import Constant
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.policies import PolicyName
    from remat_lint.engine.context import LintContext
    from remat_lint.project.model import Project, ProjectModule

# What an undeclared name does in each role (measured on jax 0.10.2: tests/jax_claims/test_policies.py).
EFFECT = {
    "saved": "so nothing is saved under it (the values are recomputed)",
    "offloaded": "so nothing is offloaded under it (the values are recomputed)",
    "excluded": "so it excludes nothing: every named value is still saved",
}


class UnknownCheckpointName(Rule):
    """
    ## What it does
    Flags a literal name in a name-based checkpoint policy (`save_only_these_names`,
    `save_any_names_but_these`, `save_and_offload_only_these_names`, also inside
    `save_from_both_policies`) that no `jax.ad_checkpoint.checkpoint_name(x, "<name>")` in the
    project declares or builds (`f"layer_{i}_out"` declares the pattern `layer_.*_out`), with the
    closest declared name as a suggestion. Names passed through a module constant
    (`save_only_these_names(*NAMES)` with `NAMES = ("a", "b")`) are checked too, also a constant
    imported from another module of the project (`from .config import NAMES`).

    Where it is reported: at the policy naming the undeclared name, in its module, also when only
    that module is linted (the project's other files are read for the names they declare).

    ## Why is this bad?
    JAX matches checkpoint names exactly and never validates them: a misspelled or renamed name
    raises nothing and warns nothing, even under `jit(grad)`. `save_only_these_names("atn_out")`
    then saves nothing under that name (the value is recomputed, as with `nothing_saveable`),
    `names_which_can_be_offloaded` offloads nothing, and `save_any_names_but_these("atn_out")`
    excludes nothing, so every named value is still saved.

    The check is project-wide: a name counts as declared when any file declares it, or mentions
    it as a string anywhere outside a policy (a name handed to a library, such as
    `make_splash_mha(..., residual_checkpoint_name="context")`), whatever rules that file's
    `per-file-ignores` turn off. The files are those `remat-lint` would lint in the project: the
    folder of the `pyproject.toml` that configures the run or, without one, the nearest folder
    above the linted files that holds a `pyproject.toml`, `.git` or `.hg` (black's project root).
    When `remat-lint` is given only some of them (pre-commit passes the staged files, an editor one
    buffer through `-` and `--stdin-filename`), the others still declare names, and findings are
    reported only in the linted files; the others are read only when a policy names something the
    linted files do not declare. Outside a project, or when a linted file is not one of the
    project's (excluded, unsaved), only the linted files count.

    Names built at run time count as patterns: `f"layer_{i}_out"`, `"mlp_%d" % i`,
    `"{}_out".format(kind)` and `prefix + "_out"` declare every name they can match
    (`layer_.*_out`); a name from a module constant, a config field's default, a dict literal, a
    parameter (its default and the literal arguments of the calls in the same module) or a class
    attribute (`self.checkpoint_str` with `checkpoint_str = "ffn1"` in the class body) counts as
    the literals it can be. A name that stays unknowable (a parameter of a function called from
    elsewhere with computed values, a config list, `partial(checkpoint_name, ...)` without a
    literal `name=`, `checkpoint_name` passed on) never silences the rule: the finding names those
    sources and is reported as `info` (one of them may give the name: real-world trap T10). A
    project's own function spelled `checkpoint_name` counts as JAX's here. It stays silent when:
    - no file declares any name or pattern (the names come from another package or a library);
    - the names in the policy are not literals (config lists), or the policy is not JAX's
      (axlearn's regex policies); or the file is a test file.

    Under flake8 the plugin runs the same project pass on the file it is given, reading the
    other files of its project through the same cache, so `flake8 --select REM` reports what
    `remat-lint` reports.

    ## Example
    ```python
    import jax
    from jax.ad_checkpoint import checkpoint_name

    def attention(q, k, v):
        out = checkpoint_name(jax.nn.dot_product_attention(q, k, v), "attn_out")
        return out

    policy = jax.checkpoint_policies.save_only_these_names("atn_out")
    ```

    ## Use instead
    ```python
    policy = jax.checkpoint_policies.save_only_these_names("attn_out")
    ```

    ## Fix safety
    No fix: the suggested name is a guess.

    ## References
    - [Gradient checkpointing: names](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [`jax.ad_checkpoint.checkpoint_name`](https://docs.jax.dev/en/latest/_autosummary/jax.ad_checkpoint.checkpoint_name.html)
    """

    code = "REM008"
    trace_check = Rule.TraceCheck("saved-name")
    name = "unknown-checkpoint-name"
    severity = Severity.WARNING
    quiet_in_tests = True  # tests name checkpoints that their own code does not declare
    project_wide = True
    project_needs_module = False

    VALID = [
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'attn_out')\n"
        "p = jax.checkpoint_policies.save_only_these_names('attn_out')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, f'{prefix}_out')\n"
        "p = jax.checkpoint_policies.save_only_these_names('attn_out')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ndef tag(x, name):\n    return checkpoint_name(x, name)\n"
        "p = jax.checkpoint_policies.save_only_these_names('mlp_out')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'a')\n"
        "kernel = make_splash_mha(mask, residual_checkpoint_name='context')\n"
        "p = jax.checkpoint_policies.save_only_these_names('a', 'context')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'a')\n"
        "p = jax.checkpoint_policies.save_only_these_names(*cfg.remat_names)",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'a')\n"
        "p = jax.checkpoint_policies.save_anything_except_these_names('b')",
        "import jax\nimport functools\nfrom jax.ad_checkpoint import checkpoint_name\ntag = functools.partial(checkpoint_name, name='b')\n"
        "y = checkpoint_name(x, 'a')\np = jax.checkpoint_policies.save_only_these_names('b')",
        "from axlearn.common.utils import save_and_offload_only_these_names_regex\nfrom jax.ad_checkpoint import checkpoint_name\n"
        "y = checkpoint_name(x, 'a')\np = save_and_offload_only_these_names_regex(names_which_can_be_saved='.*linear1_0', "
        "names_which_can_be_offloaded=None, offload_src='device', offload_dst='pinned_host')",
        # Names built at run time, from parameters and from class attributes.
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ndef block(x, i):\n    return checkpoint_name(x, 'layer_%d_out' % i)\n"
        "p = jax.checkpoint_policies.save_only_these_names('layer_3_out')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ndef tag(x, name='q'):\n    return checkpoint_name(x, name)\n"
        "y = tag(x, 'k')\np = jax.checkpoint_policies.save_only_these_names('q', 'k')",
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\nclass Ffn:\n    checkpoint_str = 'ffn1'\n"
        "    def __call__(self, x):\n        return checkpoint_name(x, self.checkpoint_str)\n"
        "p = jax.checkpoint_policies.save_only_these_names('ffn1')",
    ]
    INVALID = [
        Invalid(
            "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ndef block(x, i):\n    return checkpoint_name(x, f'layer_{i}_out')\n"
            "p = jax.checkpoint_policies.save_only_these_names('layer_out')"
        ),
        # A name that cannot be known does not silence the rule: the finding names it.
        Invalid(
            "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'attn_out')\n"
            "def tag(x, name):\n    return checkpoint_name(x, name)\np = jax.checkpoint_policies.save_only_these_names('atn_out')"
        ),
        Invalid(
            "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'attn_out')\n"
            "p = jax.checkpoint_policies.save_only_these_names('atn_out')"
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\nfrom jax import ad_checkpoint\ny = ad_checkpoint.checkpoint_name(x, name='q')\n"
            "NAMES = ('q', 'k')\np = cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names(*NAMES))"
        ),
        Invalid(
            "import jax\nfrom jax.ad_checkpoint import checkpoint_name as cn\ny = cn(x, 'a')\n"
            "p = jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=['a'], "
            "names_which_can_be_offloaded=['b'], offload_src='device', offload_dst='pinned_host')"
        ),
        Invalid(
            "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'a')\n"
            "p = jax.checkpoint_policies.save_any_names_but_these('b')"
        ),
    ]

    def check(self) -> None:
        uses, names = self.ctx.named_checkpoints.uses, self.ctx.named_checkpoints.declared
        unknown: dict[int, list[PolicyName]] = {}  # by report node: names from one constant share it
        for use in uses:
            if not _known(use.name, names.declared | names.strings, names.patterns):
                unknown.setdefault(id(use.node), []).append(use)
        for group in unknown.values():
            use = group[0]
            unknown_names = [u.name for u in group]
            data = {"names": unknown_names, "factory": use.factory, "role": use.role, "via": use.via}
            text = message(names.declared, unknown_names, use.factory, use.role, use.via)
            # Decided with the whole project in view; ``symbols``: a file that mentions one of the
            # names is read for the project phase.
            self.candidate(use.node, unknown_names, data, message=text)
        for spread in self.ctx.named_checkpoints.imported:  # ``*KEEP`` of another module: read there
            spread_data = {"names": [], "factory": spread.factory, "role": spread.role, "via": spread.node.value}
            self.candidate(spread.node, [spread.qname.rsplit(".", 1)[-1]], {**spread_data, "imported": spread.qname})

    @staticmethod
    def collect_facts(ctx: LintContext) -> dict[str, Any]:
        names = ctx.named_checkpoints.declared
        unknown = sorted({_describe(ctx, node) for node in names.unknown})
        return {
            "declared": sorted(names.declared),
            "patterns": sorted(names.patterns),
            "strings": sorted(names.strings),
            "unknown": unknown,
        }

    @classmethod
    def check_project(
        cls, candidates: list[Candidate], module: ProjectModule | None, project: Project
    ) -> list[Finding]:
        """Keep names that no file of the project declares (nor builds, nor mentions), when the
        project declares some; the sources that cannot be known are named in the message."""
        facts = list(project.facts(cls.code))
        declared = {name for _, f in facts for name in f["declared"]}
        patterns = {pattern for _, f in facts for pattern in f["patterns"]}
        if not declared and not patterns:
            return []  # the names come from another package or a library
        known = declared.union(*(f["strings"] for _, f in facts))
        here = os.path.dirname(candidates[0].finding.path)
        unknown = [f"`{code}` in {os.path.relpath(m.path, here)}" for m, f in facts for code in f["unknown"]]
        kept = []
        for candidate in candidates:
            finding, values = candidate.finding, dict(candidate.values)
            known_here = known
            if "imported" in values:
                names, sources = _imported_names(project, module, values.pop("imported"))
                values["names"] = names
                # The defining module's strings are these names themselves: they tell nothing.
                known_here = declared.union(*(f["strings"] for m, f in facts if m.path not in sources))
            remaining = [name for name in values["names"] if not _known(name, known_here, patterns)]
            if remaining:
                data = {**values, "names": remaining}
                finding.data = data  # --trace reads the names (trace/evidence.py)
                finding.message = message(declared, unknown=unknown, **data)  # suggest from the whole project
                if unknown:  # one of them may give the name after all (real-world trap T10)
                    finding.severity = Severity.INFO
                kept.append(finding)
        return kept


def _imported_names(project: Project, module: ProjectModule | None, qname: str) -> tuple[list[str], set[str]]:
    """The strings of the tuple or list another module's constant ``qname`` certainly is, and the
    paths of the modules that told."""
    resolved = project.values(module, (Constant("imported", qname=qname),)) if module is not None else None
    if resolved is None or len(resolved[0]) != 1 or resolved[0][0].strings is None:
        return [], set()
    return list(resolved[0][0].strings), {m.path for m in resolved[1]}


def _known(name: str, known: set[str], patterns: set[str]) -> bool:
    return name in known or any(re.fullmatch(pattern, name) for pattern in patterns)


def _describe(ctx: LintContext, node: cst.CSTNode) -> str:
    code = " ".join(ctx.code(node).split())
    return code if len(code) <= 60 else code[:57] + "..."


def message(
    declared: set[str], names: list[str], factory: str, role: str, via: str | None, unknown: list[str] | None = None
) -> str:
    given = ", ".join(map(repr, names)) + (f" (from `{via}`)" if via else "")
    close = [(name, difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.7)) for name in names]
    hints = "; ".join(
        f"did you mean {match[0]!r}" + (f" for {name!r}" if len(names) > 1 else "") for name, match in close if match
    )
    sources = (
        ", ".join(unknown[:2]) + (f" and {len(unknown) - 2} more" if len(unknown or ()) > 2 else "") if unknown else ""
    )
    return (
        f"`{factory}` is given {given}, but no `checkpoint_name(x, {names[0]!r})` in the linted files declares "
        f"{'it' if len(names) == 1 else 'these'}"
        + (f"; {hints}?" if hints else ".")
        + f" JAX matches names exactly and never warns, {EFFECT[role]}"
        + (f"; unless one of the names that cannot be known here gives it: {sources}" if sources else "")
    )
