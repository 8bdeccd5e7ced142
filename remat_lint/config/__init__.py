"""Which files to lint and under which settings: pyproject reading, per-file resolution, target JAX version."""
