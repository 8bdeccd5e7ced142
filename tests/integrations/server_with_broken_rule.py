"""``remat-lint server`` with REM001's check made to raise: tests/integrations/test_server.py checks that one
rule's crash costs only that rule's findings and never the server."""

import sys

from remat_lint.registry import rule_class


def _broken(self) -> None:
    raise RuntimeError("broken on purpose")


if __name__ == "__main__":
    rule_class("REM001").check = _broken
    from remat_lint.server.protocol import main

    sys.exit(main())
