"""The driver side of --trace: runs in remat-lint's own process and never imports JAX; starts one
worker subprocess per module (or the user's --trace-run command), reads its replies (protocol.py)
and turns them into findings, reports, plots and fixes. Never imports the worker side."""
