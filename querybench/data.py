"""Where benchmark data is looked up: `$QUERYBENCH_DATA`, else `../shared/data` by the checkout."""

from __future__ import annotations

import os
from pathlib import Path


def data_root() -> Path:
    env = os.environ.get("QUERYBENCH_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data"
