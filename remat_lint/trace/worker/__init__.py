"""The worker side of --trace: runs in a subprocess (or, for --trace-run, in the user's command) with
JAX imported; builds each target, traces it and judges the findings, answering in protocol.py's terms.
Never imports the driver side."""
