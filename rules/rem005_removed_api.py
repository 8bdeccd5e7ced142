from __future__ import annotations

import libcst as cst

from remat_lint.analysis.guards import expects_error
from remat_lint.analysis.semantic import child_nodes, dotted_import_name
from remat_lint.analysis.sites import RematSite, missing_target
from remat_lint.apis import POLICY_NAMESPACES, REMOVED_APIS, haiku, jax, raises_when
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

_JAX_CONCRETE = frozenset({jax.CHECKPOINT, jax.REMAT, haiku.REMAT})  # any value raises
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})
_OPTION, _ENV = "jax_new_checkpoint", "JAX_NEW_CHECKPOINT"
OPTION_REMOVED = "was removed in JAX 0.3.17, when the new `jax.checkpoint` became the only implementation"
OPTION_ERROR = "Unrecognized config option: jax_new_checkpoint"


def _upgrade(what: str, failure: str, advice: str) -> tuple[str, str]:
    """The message for a project that targets a JAX older than 0.10.0 (``target-jax-version``),
    where the API still works: JAX 0.8.2 deprecated it, 0.10.0 removed it."""
    return (
        "0.10.0",
        f"{what} is deprecated, removed in JAX 0.10.0 — breaks on upgrade. JAX 0.8.2 deprecated it; "
        f"from 0.10.0 {failure}; {advice}",
    )


class RemovedApi(Rule):
    """
    ## What it does
    Flags checkpointing APIs that JAX removed: `concrete=` on `jax.checkpoint` / `jax.remat` /
    `hk.remat` (and `concrete=True` on Flax linen remat), `jax.ad_checkpoint.checkpoint` /
    `jax.ad_checkpoint.remat`, the `jax_new_checkpoint` option and its `JAX_NEW_CHECKPOINT`
    environment variable, and importing `jax.checkpoint_policies` as if it were a module.

    ## Why is this bad?
    - `concrete` was deprecated in JAX 0.8.2 and removed in 0.10.0: any value, even `False`,
      raises `NotImplementedError` when `jax.checkpoint` or `jax.remat` wraps the function (for
      `hk.remat`: when the checkpointed function is called, at `init`/`apply`). Flax linen keeps
      the parameter, accepts `concrete=True` when wrapping and raises `NotImplementedError` at
      `init`/`apply`. Use `static_argnums` for arguments that drive Python control flow.
    - `jax.ad_checkpoint.checkpoint` and `.remat` were removed in JAX 0.10.0: attribute access
      raises `AttributeError`, `from jax.ad_checkpoint import checkpoint` raises `ImportError`.
    - `jax_new_checkpoint` was removed in JAX 0.3.17: `jax.config.update("jax_new_checkpoint",
      ...)` raises `AttributeError: Unrecognized config option`, and `JAX_NEW_CHECKPOINT` in the
      environment is silently ignored. The names are reported where code sets or reads them
      (a call argument, a subscript, a dict key, `jax.config.jax_new_checkpoint`), not in
      comparisons or docs.
    - `jax.checkpoint_policies` is a namespace object, not a module: `import
      jax.checkpoint_policies` and `from jax.checkpoint_policies import ...` raise
      `ModuleNotFoundError`.

    Code that expects the error (a `try` whose `except` catches it, `pytest.raises`) is not
    flagged: compatibility shims for older JAX are fine.

    ## Example
    ```python
    import jax
    import jax.checkpoint_policies as cp

    block = jax.checkpoint(block, concrete=True)
    ```

    ## Use instead
    ```python
    import jax
    from jax import checkpoint_policies as cp

    block = jax.checkpoint(block, static_argnums=(1,))
    ```

    ## Fix safety
    Safe: `concrete=False` is deleted (it was the default); `jax.ad_checkpoint.checkpoint` /
    `.remat` become `jax.checkpoint` / `jax.remat` (the objects they used to be);
    `from jax.ad_checkpoint import checkpoint` becomes `from jax import checkpoint`; `import
    jax.checkpoint_policies as cp` becomes `from jax import checkpoint_policies as cp`.
    `concrete=True` has no fix: which arguments must be static needs a decision.

    ## References
    - [JEP 11830: the new `jax.checkpoint`](https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html)
    - [JAX changelog](https://docs.jax.dev/en/latest/changelog.html)
    """

    code = "REM005"
    trace_check = Rule.TraceCheck(
        "exception", raises=(("NotImplementedError", "concrete"), ("AttributeError", ""), ("ImportError", ""))
    )
    name = "removed-api"
    severity = Severity.ERROR
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)
    prefilter_words = ("jax_new_checkpoint",)  # the option and the variable may appear in strings only (any case)

    VALID = [
        "import jax\ng = jax.checkpoint(f, static_argnums=(1,))",
        "import flax.linen as nn\nB = nn.remat(Block, concrete=False)",
        "from jax import checkpoint_policies as cp\nfrom jax.ad_checkpoint import checkpoint_name, checkpoint_policies",
        "import jax.ad_checkpoint\np = jax.ad_checkpoint.checkpoint_policies.dots_saveable",
        "try:\n    from jax.ad_checkpoint import checkpoint\nexcept ImportError:\n    from jax import checkpoint",
        "import jax\ntry:\n    jax.config.update('jax_new_checkpoint', True)\nexcept AttributeError:\n    pass",
        "import jax\nimport pytest\nwith pytest.raises(NotImplementedError):\n    jax.checkpoint(f, concrete=True)",
        '"""Docs: jax_new_checkpoint was removed; see jax.checkpoint."""',
        "REMOVED = {'jax_new_checkpoint', 'jax_remat3'}\nflags = {k: v for k, v in flags.items() if k != 'jax_new_checkpoint'}",
        "import torch\ny = torch.utils.checkpoint.checkpoint(f, x, concrete=True)",
        "import jax\n@jax.checkpoint(concrete=True)\ndef g(x):\n    return x",  # a TypeError first (REM006)
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.checkpoint(f, concrete=False)",
            fixed="import jax\ng = jax.checkpoint(f)",
        ),
        Invalid(
            "import functools\nimport jax\n@functools.partial(jax.remat, concrete=False, prevent_cse=False)\ndef g(x):\n    return x",
            fixed="import functools\nimport jax\n@functools.partial(jax.remat, prevent_cse=False)\ndef g(x):\n    return x",
        ),
        Invalid(
            "import jax\ng = jax.checkpoint(\n    f,\n    concrete=False,\n)",
            fixed="import jax\ng = jax.checkpoint(\n    f,\n)",
        ),
        Invalid("import jax\ng = jax.checkpoint(f, concrete=True)"),
        Invalid(
            "import functools\nimport jax\n@functools.partial(jax.checkpoint, concrete=True)\ndef g(x):\n    return x"
        ),
        Invalid("import haiku as hk\ng = hk.remat(f, concrete=True)"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, concrete=True)"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, True, True, True)"),
        Invalid(
            "import jax.ad_checkpoint\ng = jax.ad_checkpoint.checkpoint(f)",
            fixed="import jax.ad_checkpoint\ng = jax.checkpoint(f)",
        ),
        Invalid(
            "from jax.ad_checkpoint import checkpoint, remat as r",
            fixed="from jax import checkpoint, remat as r",
        ),
        Invalid("from jax.ad_checkpoint import checkpoint, checkpoint_name"),
        Invalid(
            "import jax.checkpoint_policies as cp",
            fixed="from jax import checkpoint_policies as cp",
        ),
        Invalid("import jax\nimport jax.checkpoint_policies", fixed="import jax\nimport jax"),
        Invalid("from jax.checkpoint_policies import dots_saveable"),
        Invalid("import jax\njax.config.update('jax_new_checkpoint', False)"),
        Invalid("import os\nos.environ.setdefault('JAX_NEW_CHECKPOINT', '0')"),
        Invalid("import os\nenv = dict(os.environ, JAX_NEW_CHECKPOINT='0')"),
        Invalid("import subprocess\nsubprocess.run(cmd, env={'JAX_NEW_CHECKPOINT': '0'})"),
        Invalid("import jax\nenabled = jax.config.jax_new_checkpoint"),
    ]

    def check(self) -> None:
        for site in self.ctx.sites:
            self._check_concrete(site)
        for attribute in self.ctx.model.attributes:
            replacement = REMOVED_APIS.get(self.ctx.qualified_name(attribute) or "")
            if replacement is not None and not isinstance(self.ctx.model.parent(attribute), cst.AssignTarget):
                self._report_removed_attribute(attribute, replacement)
        for statement in self.ctx.model.imports:
            if isinstance(statement, cst.ImportFrom):
                self._check_import_from(statement)
            else:
                self._check_import(statement)
        if "new_checkpoint" in self.ctx.source.lower():
            self._check_new_checkpoint_option()

    # --- concrete= ----------------------------------------------------------------------------

    def _check_concrete(self, site: RematSite) -> None:
        arg = site.keyword("concrete")
        if site.api.family == "flax" and arg is None and len(site.positional) > 2:
            arg = site.positional[site.api.positional.index("concrete")]
        if arg is None or expects_error(self.ctx.model, site.node, frozenset({"NotImplementedError"})):
            return
        if site.ref.factory is not None and missing_target(self.ctx.model, site.ref.factory):
            return  # ``@jax.checkpoint(concrete=...)`` raises TypeError before it wraps anything (REM006)
        if site.api.qname in _JAX_CONCRETE:
            is_false = isinstance(arg.value, cst.Name) and arg.value.value == "False"
            self.report(
                site.node,
                f"`concrete=` was removed from `{site.api.display}` in JAX 0.10.0. Any value, even `False`, raises "
                f"`NotImplementedError` {raises_when(site.api)}; "
                + (
                    "delete it (`False` was the default)"
                    if is_false
                    else "use `static_argnums=` for arguments that drive Python control flow"
                ),
                fix=self._delete_fix(site, arg) if is_false and arg.keyword is not None else None,
                # concrete=True raised long before (since the new checkpoint, JAX 0.3.17): only False changed.
                before_jax=_upgrade(
                    f"`concrete=False` on `{site.api.display}`",
                    f"any value raises `NotImplementedError` {raises_when(site.api)}",
                    "delete it (`False` was the default)",
                )
                if is_false
                else None,
            )
        elif site.api.family == "flax" and isinstance(arg.value, cst.Name) and arg.value.value == "True":
            self.report(
                site.node,
                f"`concrete=True` no longer works. `{site.api.display}` accepts it when wrapping, and `init`/`apply` "
                "raise `NotImplementedError: The concrete argument is deprecated. Use static_argnums instead.` (JAX "
                "removed `concrete` in 0.10.0); use `static_argnums=`",
            )

    def _delete_fix(self, site: RematSite, arg: cst.Arg) -> FixSpec | None:
        replacement = site.without_argument(arg)
        return FixSpec("Delete `concrete=False`", [replacement]) if replacement is not None else None

    # --- removed names and modules ------------------------------------------------------------

    def _report_removed_attribute(self, attribute: cst.Attribute, replacement: str) -> None:
        if expects_error(self.ctx.model, attribute, frozenset({"AttributeError"})):
            return
        spelled, module = self.ctx.spell(replacement)
        self.report(
            attribute,
            f"`{self.ctx.code(attribute)}` was removed in JAX 0.10.0. Accessing it raises `AttributeError`; use "
            f"`{replacement}`",
            fix=FixSpec(f"Use `{spelled}`", [(attribute, spelled)], add_import=module),
            before_jax=_upgrade(
                f"`{self.ctx.code(attribute)}`", "accessing it raises `AttributeError`", f"use `{replacement}`"
            ),
        )

    def _check_import_from(self, statement: cst.ImportFrom) -> None:
        if statement.module is None or statement.relative or isinstance(statement.names, cst.ImportStar):
            return
        module = dotted_import_name(statement.module)
        if expects_error(self.ctx.model, statement, _IMPORT_ERRORS):
            return
        if module in POLICY_NAMESPACES:
            self.report(
                statement,
                f"`{module}` is a namespace object, not a module. This import raises `ModuleNotFoundError: No module "
                f"named '{module}'`; use `from {module.rpartition('.')[0]} import checkpoint_policies`",
            )
            return
        removed = [a for a in statement.names if f"{module}.{dotted_import_name(a.name)}" in REMOVED_APIS]
        for alias in removed:
            name = dotted_import_name(alias.name)
            fix = None
            if len(removed) == len(statement.names):
                fix = FixSpec("Import from `jax`", [(statement.module, "jax")])
            self.report(
                alias,
                f"`{module}.{name}` was removed in JAX 0.10.0. This import raises `ImportError: cannot import name "
                f"'{name}' from '{module}'`; use `{REMOVED_APIS[f'{module}.{name}']}`",
                fix=fix,
                before_jax=_upgrade(
                    f"`{module}.{name}`",
                    "this import raises `ImportError`",
                    f"use `{REMOVED_APIS[f'{module}.{name}']}`",
                ),
            )

    def _check_import(self, statement: cst.Import) -> None:
        for alias in statement.names:
            module = dotted_import_name(alias.name)
            if module not in POLICY_NAMESPACES or expects_error(self.ctx.model, statement, _IMPORT_ERRORS):
                continue
            parent, _, leaf = module.rpartition(".")
            fix = None
            if len(statement.names) == 1:
                if alias.asname is not None:
                    new = f"from {parent} import {leaf} as {self.ctx.code(alias.asname.name)}"
                else:
                    new = f"import {parent}"  # what the statement binds (``jax``) stays bound
                fix = FixSpec(f"Use `{new}`", [(statement, new)])
            self.report(
                alias,
                f"`{module}` is a namespace object, not a module. This import raises `ModuleNotFoundError: No module "
                f"named '{module}'`; use `from {parent} import {leaf}`",
                fix=fix,
            )

    # --- jax_new_checkpoint -------------------------------------------------------------------

    def _check_new_checkpoint_option(self) -> None:
        for attribute in self.ctx.model.attributes:
            base = self.ctx.qualified_name(attribute.value) or ""
            if attribute.attr.value == _OPTION and base.split(".", 1)[0] in ("jax", "absl"):
                self._report_option(attribute)
        for call in self.ctx.model.calls:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == _ENV:
                    self._report_env(arg)
        stack: list[cst.CSTNode] = [self.ctx.module]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.SimpleString) and self._sets_or_reads(node):
                if node.evaluated_value == _OPTION:
                    self._report_option(node)
                elif node.evaluated_value == _ENV:
                    self._report_env(node)
            stack.extend(child_nodes(node))

    def _sets_or_reads(self, string: cst.SimpleString) -> bool:
        """A name used as a key: ``update("...", v)``, ``environ["..."]``, ``{"...": v}`` (a
        comparison, a list of names or a docstring only mentions it)."""
        parent = self.ctx.model.parent(string)
        return isinstance(parent, (cst.Arg, cst.Index)) or (
            isinstance(parent, cst.DictElement) and parent.key is string
        )

    def _report_option(self, node: cst.CSTNode) -> None:
        if not expects_error(self.ctx.model, node, frozenset({"AttributeError"})):
            self.report(
                node,
                "The `jax_new_checkpoint` option no longer exists: setting or reading it raises `AttributeError`. "
                f"It {OPTION_REMOVED} (`jax.config.update` says `{OPTION_ERROR}`); delete it",
            )

    def _report_env(self, node: cst.CSTNode) -> None:
        self.report(
            node,
            f"`JAX_NEW_CHECKPOINT` is silently ignored. The option {OPTION_REMOVED}, so setting it changes "
            "nothing; delete it",
        )
