"""``python -m switchyard ...`` and the ``switchyard`` command: the proxy's command line
(``serve``, ``check``, ``report``, ``keys``, ``demo``), run from the wheel."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from . import _core


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); answers the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    return _core.cli(args)


if __name__ == "__main__":
    sys.exit(main())
