"""Which files are worth a libcst parse, decided from the text and with ``ast`` (no libcst)."""
