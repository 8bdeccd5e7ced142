"""``python -m remat_lint.trace.worker``: the worker subprocess the driver starts (session.py)."""

from remat_lint.trace.worker.session import main

main()
