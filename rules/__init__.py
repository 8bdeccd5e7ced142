"""remat-lint's rules, one module per code (shipped as ``remat_lint.rules``)."""
