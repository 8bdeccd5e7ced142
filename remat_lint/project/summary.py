"""What a module offers the others, as plain data: its imports, its top-level names, the calls its
top-level functions and classes' methods make (and those the functions end with), what it hands to
loop bodies, what of other modules it differentiates, its classes' bases and ``__call__``
signatures, its constants and config classes' fields.
Extracted once per file content (``extract.py``); the result cache stores it with the file's
findings. Free of libcst, so a warm run never imports it."""

from __future__ import annotations

from dataclasses import dataclass, field

from remat_lint.project.modules import Ref

OPAQUE = -1  # ``ModuleSummary.imported_uses``: a use other than a plain call
ANNOTATION = -2  # ``ModuleSummary.imported_uses``: a type annotation (``cfg: Config``), which builds nothing


@dataclass(frozen=True)
class Param:
    """A positional parameter, as the rules judging ``static_argnums`` see it."""

    name: str
    bool_like: bool  # a flag (annotated ``bool``, a bool default, a flag's name)
    array_like: bool  # an array (annotated as one, or required and unannotated)
    controls_flow: bool  # Python control flow on it in the body (a flag or not) fails when it is traced


@dataclass(frozen=True)
class Signature:
    """A module-level class's ``__call__``: its positional parameters after ``self``."""

    params: tuple[Param, ...]
    star_args: bool


@dataclass(frozen=True)
class Differentiated:
    """A module-level function of another module that this one differentiates where a checkpoint
    of it would cost (not per chunk or example, not in test code, a first-order gradient)."""

    ref: Ref
    transform: str  # as written: ``jax.value_and_grad``, ``partial(jax.grad, argnums=1)``
    qname: str  # the transform: ``jax.value_and_grad``
    kind: str  # what it does with the primal output: grad, value_and_grad (also grad with has_aux), ...
    row: int
    # Set when the function (of another module, or a plain one of this module that may end with
    # one) is not differentiated itself but called last by one of this module that is (``via``),
    # with the cheap work after the call (``after``): its last stage is that one's.
    via: str | None = None
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class TailCall:
    """A call of another module's function, or of a plain module-level function of this one,
    whose result a module-level function of this one returns with only cheap work after it
    (``after``): that function's last stage may be there, or further down the callee's tail.
    ``whole``: the function is only ``return callee(<names>)``, so differentiating it
    differentiates the callee whole."""

    ref: Ref
    after: tuple[str, ...]
    whole: bool


@dataclass(frozen=True)
class ImportedCall:
    """A call of another module's name, outside test code and without ``*``/``**`` arguments:
    ``scale(x, twice=True)``, or of what calling it builds (``instance``: a Flax Module,
    ``RematBlock()(x, deterministic=True)``, also through ``self.block = RematBlock()``)."""

    ref: Ref
    instance: bool
    func: str  # the callee as written (``RematBlock()``, ``self.block``); its row is looked up when named
    positional: int  # how many arguments are passed by position
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Constant:
    """One value a module-level name or a config field can hold: ``analysis.values.Value`` as
    plain data. Kinds ``imported``/``imported_field`` name another module's value (``qname``, as
    this module imports it), ``local_field`` a field of this module's config class
    (``Config.policy``), which the project resolves (``DEFERRED_KINDS``). A tuple or list of literal strings
    carries them (``KEEP = ("q_proj", "k_proj")``: checkpoint names another module spreads)."""

    kind: str
    literal: str | bool | int | float | None = None
    qname: str | None = None
    strings: tuple[str, ...] | None = None


Constants = tuple[Constant, ...]
# The kinds of placeholder that the project resolves: another module's name, a field of any
# instance of another module's config class, a field of any instance of one of this module's.
# An entry of another module's table (``POLICIES[key]``: ``literal`` the key, None for any).
DEFERRED_KINDS = ("imported", "imported_field", "local_field", "imported_item")


@dataclass(frozen=True)
class TableEntry:
    """An entry of a dict literal bound once to a module-level name that the module never changes."""

    key: Constant | None  # None: unknown
    values: Constants | None  # what the entry's value can be; None: unknown


@dataclass(frozen=True)
class ConfigField:
    """A field of a config class (a dataclass, ``NamedTuple``, ``eqx.Module``, ``flax.struct``
    class) that nothing in its module assigns. None: unknown."""

    default: Constants | None  # its default's values (``Config.field``, ``Config().field``)
    bounded: Constants | None  # what its annotation allows any instance (``Literal[...]``, ``str``)
    position: int  # its place among the class's fields: more positional arguments may set it


@dataclass
class ModuleSummary:
    imports: dict[str, Ref] = field(default_factory=dict)  # module-level name -> what it imports
    star_imports: list[Ref] = field(default_factory=list)  # ``from m import *`` at module level, in order
    defines: set[str] = field(default_factory=set)  # module-level names bound otherwise
    calls: dict[str, list[Ref]] = field(default_factory=dict)  # top-level def or class (its methods) -> what it calls
    loop_bodies: list[Ref] = field(default_factory=list)  # handed to scan/fori_loop/... bodies
    signatures: dict[str, Signature] = field(default_factory=dict)  # module-level class -> its __call__
    bases: dict[str, list[Ref]] = field(default_factory=dict)  # module-level class -> its base classes
    differentiated: list[Differentiated] = field(default_factory=list)
    tail_calls: dict[str, list[TailCall]] = field(default_factory=dict)  # top-level def -> its tail calls
    imported_calls: list[ImportedCall] = field(default_factory=list)
    constants: dict[str, Constants] = field(default_factory=dict)  # module-level name bound once -> its values
    tables: dict[str, tuple[TableEntry, ...]] = field(default_factory=dict)  # module-level dict literal -> its entries
    config_fields: dict[str, dict[str, ConfigField]] = field(default_factory=dict)  # config class -> field -> it
    # config class -> the most positional arguments a use of it here passes when every use only
    # constructs it (-1: none does); None when one may do anything else (analysis/module_fields.py)
    constructed: dict[str, int | None] = field(default_factory=dict)
    written_fields: set[str] = field(default_factory=set)  # attributes assigned here (``cfg.policy = ...``)
    changed_imports: set[str] = field(default_factory=set)  # imported names changed in place (``POLICIES[k] = v``)
    # keyword -> every value the module's calls pass as ``keyword=`` (None: one is unknown); what
    # a Module field can be set to here (analysis/module_fields.py)
    keyword_values: dict[str, Constants | None] = field(default_factory=dict)
    # the same for the calls that copy an instance with fields changed (``dataclasses.replace``),
    # which need not name its class
    copied_values: dict[str, Constants | None] = field(default_factory=dict)
    # The uses of names imported from the project's other modules: (name, positional arguments)
    # for a call of it without ``*``/``**``, (name, ANNOTATION) in a type annotation, (name, OPAQUE)
    # for any other use (passed on, wrapped, subclassed, spread): how the module may construct
    # another module's class.
    imported_uses: set[tuple[Ref, int]] = field(default_factory=set)

    def related_names(self, names: frozenset[str]) -> set[str]:
        """Other names that the modules which use ``names`` may spell them with: the bases of the
        classes defined here under these names, the aliases this module imports them as
        (``from .losses import loss_fn as lf``, also a re-export in an ``__init__``), the other
        modules' names that constants defined here under these names hold (``POLICY = BASE``), the
        functions here that call them (a loop body elsewhere may reach them through those) and the
        classes whose methods build a class among them (a Transformer building a Decoder; CamelCase
        names only: a common function's name would draw in most of a large project's files)."""
        bases = {ref[1].rsplit(".", 1)[-1] for name in names for ref in self.bases.get(name, ())}
        held = {
            c.qname.rsplit(".", 1)[-1]
            for name in names
            for c in self.constants.get(name, ())
            if c.qname and c.kind.startswith("imported")
        }
        callers = {
            caller
            for caller, refs in self.calls.items()
            if any(
                (called := ref[1].rsplit(".", 1)[-1]) in names and (caller not in self.bases or called[:1].isupper())
                for ref in refs
            )
        }
        return (
            bases
            | held
            | callers
            | {local for local, ref in self.imports.items() if ref[1].rsplit(".", 1)[-1] in names}
        )
