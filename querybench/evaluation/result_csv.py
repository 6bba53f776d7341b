"""Reading Spider 2.0 result CSVs exactly as the official scorers do.

The official `evaluate.py` reads every prediction and gold with a bare `pd.read_csv(path)`, and
its verdicts depend on the types pandas infers (an integer column with a gap becomes floats, a
column with one word becomes text, `NA`/`null`/`None` become missing). Matching those verdicts
bit for bit means parsing with the very same function, so this is the one place pandas is used.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from querybench.errors import DataError


def read_result_csv(path: str | Path) -> pd.DataFrame:
    """Parse one result CSV like the official scorer; any failure is a `DataError` with a reason."""
    try:
        return pd.read_csv(path)
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path}: empty file (no header)") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: unreadable CSV ({first})") from exc
