"""DuckDB databases handed in as answers (what a DBT project left, an agentic `.duckdb` answer)
and their gold, read only inside the killable query child.

The official scorer opens both with DuckDB's defaults in its own process: a view in the
prediction may read the gold file (`read_duckdb`), any host file (`read_csv`), or compute for
hours. Here:

* a prediction's path passes the one prediction reader's checks (`checked_database`: a
  regular file, no link out of its folder or into the gold, no special file, no oversize),
  its `.wal` sidecar too;
* every database opens in a `QueryProcess` child with `engines.duckdb`'s settings
  (read-only, external access off, no extension install or autoload, configuration locked), so
  DuckDB itself refuses a view or macro that reaches outside its file; that table is then
  `bad_prediction_file` with DuckDB's reason;
* one deadline covers opening the database, listing its tables and fetching them; the child
  is killed at it;
* a prediction's tables are capped in rows (one past the cap fetched, never more) and each
  frame in bytes.

The frames are DuckDB's `fetchdf()`, as the official scorer reads them: on honest input
every verdict is the official one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from querybench.engines.isolated import QueryProcess
from querybench.engines.registry import ENGINES
from querybench.errors import (
    EXTERNAL_ACCESS,
    DatabaseProblem,
    EngineError,
    ErrorCode,
    PredictionRefused,
    QueryRefused,
    QueryTimeout,
)
from querybench.errors import ResultTooLarge as _TooLarge
from querybench.evaluation.prediction_file import ReadLimits, checked_database

if TYPE_CHECKING:
    import pandas as pd

# Seconds one database may take to open, list and hand over its tables.
DATABASE_TIMEOUT_S = 120.0
# Rows a predicted table may have beyond which it is not read (at least its gold table's).
MAX_PREDICTED_ROWS = 1_000_000


class DatabaseReader:
    """Reads databases in killable children, one per thread that reads, kept until `close`
    (a child imports pandas once, not per database); each database is closed in the child
    once read, so nothing of one answer is left open for the next."""

    def __init__(self, timeout: float = DATABASE_TIMEOUT_S) -> None:
        self.timeout = timeout
        self._local = threading.local()
        self._all: list[QueryProcess] = []
        self._lock = threading.Lock()
        # Databases (path, size, mtime) that ran past the deadline: both scorings read each
        # answer, and the second would only wait as long again.
        self._timed_out: dict[tuple[str, int, int], DatabaseProblem] = {}

    def __enter__(self) -> DatabaseReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            processes, self._all = self._all, []
        for process in processes:
            process.close()

    def gold(self, path: Path, names: Sequence[str] | None, *, quote: bool) -> Tables:
        """The gold's tables (`SHOW TABLES` when `names` is None); any failure `gold_error`."""
        return self._tables(Path(path).resolve(), names, quote, None, prediction=False)

    def prediction(
        self, path: Path, names: Sequence[str], *, quote: bool, gold: Path, min_rows: int = 0
    ) -> Tables:
        """A prediction's tables `names`, after the prediction reader's checks (no link out of
        its folder or into the gold's); more rows than `MAX_PREDICTED_ROWS` (or `min_rows`,
        its gold's) is `too_large`."""
        try:
            target = checked_database(path, path.parent, ReadLimits(), (gold.parent,))
        except PredictionRefused as refused:
            code = (
                ErrorCode.BAD_PREDICTION_FILE
                if refused.code is ErrorCode.MISSING_PREDICTION
                else refused.code
            )
            raise DatabaseProblem(code, f"cannot open {str(path)!r}: {refused}") from None
        rows = max(MAX_PREDICTED_ROWS, min_rows)
        return self._tables(target, names, quote, rows, prediction=True)

    def _tables(
        self,
        path: Path,
        names: Sequence[str] | None,
        quote: bool,
        max_rows: int | None,
        *,
        prediction: bool,
    ) -> Tables:
        try:
            state = os.stat(path)
            key: tuple[str, int, int] | None = (str(path), state.st_size, state.st_mtime_ns)
        except OSError:
            key = None  # the open says why
        with self._lock:
            known = self._timed_out.get(key) if key is not None else None
        if known is not None:
            raise known
        try:
            return self._read_tables(path, names, quote, max_rows, prediction=prediction)
        except DatabaseProblem as problem:
            if problem.timed_out and key is not None:
                with self._lock:
                    self._timed_out[key] = problem
            raise

    def _read_tables(
        self,
        path: Path,
        names: Sequence[str] | None,
        quote: bool,
        max_rows: int | None,
        *,
        prediction: bool,
    ) -> Tables:
        failed = ErrorCode.BAD_PREDICTION_FILE if prediction else ErrorCode.GOLD_ERROR
        database = ENGINES["duckdb"].url_for(path)
        process = self._process()
        try:
            process.preload("pandas")  # before the deadline starts: fetchdf needs it
            deadline = time.monotonic() + self.timeout
            if names is None:
                listed = self._read(process, database, ["SHOW TABLES"], None, deadline)
                names = [str(row) for row in _frame(listed[0], "SHOW TABLES", failed).iloc[:, 0]]
            # The official pastes a name unquoted; the strict reader quotes it.
            sqls = [f"SELECT * FROM {_quoted(n) if quote else n}" for n in names]
            if max_rows is not None:  # one past the cap is all that is ever fetched
                sqls = [f"{sql} LIMIT {max_rows + 1}" for sql in sqls]
            outcomes = self._read(process, database, sqls, max_rows, deadline)
        except QueryTimeout as exc:
            code = ErrorCode.TIMEOUT if prediction else ErrorCode.GOLD_ERROR
            raise DatabaseProblem(code, f"reading {str(path)!r}: {exc}", timed_out=True) from None
        except EngineError as exc:
            raise DatabaseProblem(failed, f"cannot open {str(path)!r}: {exc}") from None
        finally:
            with contextlib.suppress(EngineError):  # killed: nothing is left open
                process.forget(database)
        frames = [
            _frame(outcome, name, ErrorCode.WRONG_RESULT if prediction else ErrorCode.GOLD_ERROR)
            for name, outcome in zip(names, outcomes, strict=False)
        ]
        return list(names), frames

    def _read(
        self,
        process: QueryProcess,
        database: str,
        sqls: list[str],
        max_rows: int | None,
        deadline: float,
    ) -> list[pd.DataFrame | EngineError]:
        left = max(0.001, round(deadline - time.monotonic(), 3))
        outcomes: list[pd.DataFrame | EngineError] = process.call(
            database, "execute_frames", sqls, left, max_rows, timeout=left
        )
        return outcomes

    def _process(self) -> QueryProcess:
        process: QueryProcess | None = getattr(self._local, "process", None)
        if process is None:
            process = self._local.process = QueryProcess(open_databases=2)
            with self._lock:
                self._all.append(process)
        return process


Tables = tuple[list[str], list["pd.DataFrame"]]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _frame(outcome: pd.DataFrame | EngineError, name: str, missing: ErrorCode) -> pd.DataFrame:
    """A table's frame, or the problem its error is: a read outside the database file is
    `bad_prediction_file` (a gold's `gold_error`), a cap `too_large`, a timeout `timeout`,
    anything else (no such table) `missing`."""
    if not isinstance(outcome, EngineError):
        return outcome
    gold = missing is ErrorCode.GOLD_ERROR
    if isinstance(outcome, QueryRefused) and outcome.statement == EXTERNAL_ACCESS:
        code = ErrorCode.GOLD_ERROR if gold else ErrorCode.BAD_PREDICTION_FILE
        why = f"table {name!r} reaches outside its database file (refused): {outcome}"
        raise DatabaseProblem(code, why)
    if isinstance(outcome, _TooLarge):
        raise DatabaseProblem(
            ErrorCode.GOLD_ERROR if gold else ErrorCode.TOO_LARGE, f"table {name!r}: {outcome}"
        )
    if isinstance(outcome, QueryTimeout):
        code = ErrorCode.GOLD_ERROR if gold else ErrorCode.TIMEOUT
        raise DatabaseProblem(code, f"table {name!r}: {outcome}", timed_out=True)
    raise DatabaseProblem(missing, f"cannot read table {name!r}: {outcome}")
