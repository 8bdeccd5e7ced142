"""``remat-lint server``: a Language Server (pygls, the optional ``server`` extra).

The static linter never imports this package: the CLI imports it only for the ``server``
subcommand, and says which extra to install when pygls is missing.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv not in ([], ["--stdio"]):  # editors' configurations often pass --stdio
        print("usage: remat-lint server [--stdio]  (a Language Server over stdio)", file=sys.stderr)
        return 2
    try:
        from remat_lint.server.protocol import main as serve
    except ImportError as exc:
        print(f"remat-lint server needs pygls: pip install 'remat-lint[server]' ({exc})", file=sys.stderr)
        return 2
    return serve()
