"""Haiku's APIs (measured on dm-haiku 0.0.17; tests/test_apis.py introspects the installed package)."""

from __future__ import annotations

from remat_lint.apis.jax import REMAT_KEYWORDS
from remat_lint.apis.records import BodyParam, DiffApi, RematApi

REMAT = "haiku.remat"

REMAT_APIS = [RematApi(REMAT, "haiku", "fun", REMAT_KEYWORDS, (), False, "hk.remat", "remat")]

DIFF_APIS = [
    DiffApi("haiku.grad", "grad", "fun"),
    DiffApi("haiku.value_and_grad", "value_and_grad", "fun"),
]

LOOP_APIS: dict[str, BodyParam] = {
    "haiku.scan": (0, "f"),
    "haiku.fori_loop": (2, "body_fun"),
    "haiku.while_loop": (1, "body_fun"),
    "haiku.map": (0, "f"),
}
SCANS = frozenset({"haiku.scan"})
VMAP_APIS: dict[str, BodyParam] = {"haiku.vmap": (0, "fun")}
