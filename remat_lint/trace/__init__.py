"""--trace: confirm static findings by tracing the code on a JAX backend, in worker subprocesses."""
