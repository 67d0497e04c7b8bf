"""``python -m rcclx_core.perf``: the same as the ``rcclx-perf`` command."""

import sys

from rcclx_core.perf.cli import main

if __name__ == "__main__":
    sys.exit(main())
