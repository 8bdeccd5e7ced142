"""Work not redone: the per-file result cache, and replay of an unchanged invocation."""
