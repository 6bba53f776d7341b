"""The contract of every child process that runs untrusted execution, said once.

One supervisor drives such children (`engines/supervisor.py`, the child's side
`engines/child.py`): `isolated.QueryProcess` (the pool, `run_one`, the agents and tools, the
DuckDB answers of `evaluation/database_answer.py`, the evaluators' children) and the RL
reward's `envs/reward_workers.py` (its work kind `envs/reward_child.py`) are work framed over
it, never a second way to start, time or stop a child:

* **The parent holds the deadline** (`timeouts.py`: CPU time for embedded engines, the wall
  clock for servers), the one the child announces for the step it starts (a query, a
  reward's gold or answer, an open). A step that has not ended `GRACE_S` past its deadline
  gets its child killed; its item's outcome is `past_timeout` (the rest of a batch goes to a
  fresh child). An engine's own interrupt may stop a query sooner; nothing inside the child
  is trusted to stop it.
* **Opening is bounded too**, by `OPEN_TIMEOUT_S`: no engine has an open timeout of its own.
* **A child enters the boundary in one way** (`enter_query_child`, its first act): its
  environment becomes `query_environment()` (the parent's without API keys, tokens and
  passwords, the engines' own password variables kept), its memory is capped by the OS
  (`memory.cap_memory`: past it a query is `too_large`, never a crash), and its CPU time is
  the running query's (`timeouts.mark_query_process`).
* **Databases are opened only through `engines.connect`**: read-only, one statement per
  query, results capped in rows and bytes, DuckDB with external access off and its
  configuration locked.
* **A reply is bounded** (`max_reply_bytes`, from the result byte cap): the child sends none
  past it (it answers `too_large`), the parent reads no length past it, nor a frame that
  stalls (`supervisor.REPLY_STALL_S`).
* **A child that ends is said so in one way** (`exit_reason`), and the parent kills every
  child it started before it stops waiting for it (Ctrl-C, an exception).

Ctrl-C is the one designed difference, a setting of the child (`ChildSetup.ignore_ctrl_c`): a
`QueryProcess` child dies of the terminal's SIGINT (unless its parent ignores it), a reward
child ignores it (its trainer decides when it ends).
"""

from __future__ import annotations

import os
import re
import signal

from querybench.engines.base import MAX_RESULT_BYTES_ENV, max_result_bytes
from querybench.engines.memory import cap_memory
from querybench.engines.registry import ENGINES
from querybench.engines.timeouts import WALL_CLOCK, mark_query_process, timed_out
from querybench.errors import QueryTimeout, ResultTooManyBytes

# Opening a database has no timeout of its own; a child that takes longer is killed.
OPEN_TIMEOUT_S = 120.0

# The cap on one reply's pickle, from the cap on one result's bytes (`max_result_bytes`):
# a result counts text by its characters, which take up to 4 bytes each in UTF-8, and a cell
# pickles with a few bytes of framing beyond the 8 a number counts for; the margin holds every
# reply that is no result (an error, a reward's verdicts, a table list) and a small result's
# framing. 1,088 MiB with the default result cap. A child refuses to send more (its reply
# is then `too_large`); a parent refuses to read a length past it (a child taken over).
REPLY_BYTES_PER_RESULT_BYTE = 4
REPLY_MARGIN_BYTES = 64 * 1024**2

# Names of model-service and other API secrets, which a process running a model's SQL never
# needs (a key, a token, a password: OPENAI_KEY and SMTP_PASSWORD as much as OPENAI_API_KEY).
_SECRET_NAME = re.compile(
    r"(API_?KEY|_KEY$|_TOKEN|SECRET|ACCESS_KEY|PASSWORD|PASSWD|_PWD$)", re.IGNORECASE
)


def query_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a process that runs a model's SQL: the parent's, without its API
    keys, tokens and secrets (OPENAI_API_KEY, HF_TOKEN, ...), keeping what the engines read
    (their password variables, SNOWFLAKE_*, GOOGLE_APPLICATION_CREDENTIALS)."""
    keep = {spec.password_env for spec in ENGINES.values() if spec.password_env}
    source = dict(os.environ if environ is None else environ)
    return {
        name: value
        for name, value in source.items()
        if name in keep or name.startswith("SNOWFLAKE_") or not _SECRET_NAME.search(name)
    }


def enter_query_child(*, ignore_ctrl_c: bool, memory_bytes: int | None) -> None:
    """What a child does before it runs any untrusted SQL, the same in every supervisor:
    Ctrl-C (a terminal's SIGINT reaches the whole group) kills it at once and silently, or is
    ignored where its parent goes on; its CPU time is its query's; its memory is capped
    (`memory_bytes`, None: `$QUERYBENCH_QUERY_MEMORY_BYTES` or the default); no API key or
    token is left in its environment."""
    signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_ctrl_c else signal.SIG_DFL)
    mark_query_process()
    cap_memory(memory_bytes)
    keep = query_environment()
    os.environ.clear()
    os.environ.update(keep)


def max_reply_bytes() -> int:
    """The cap on one reply's pickle, from the result byte cap (`REPLY_BYTES_PER_RESULT_BYTE`)."""
    return REPLY_BYTES_PER_RESULT_BYTE * max_result_bytes() + REPLY_MARGIN_BYTES


def reply_too_large(size: int, cap: int) -> ResultTooManyBytes:
    """The error a child answers for a reply of `size` bytes past the reply cap `cap`."""
    return ResultTooManyBytes(
        f"the reply holds {size:,} bytes, past the reply cap of {cap:,} bytes "
        f"({REPLY_BYTES_PER_RESULT_BYTE} x the result byte cap + {REPLY_MARGIN_BYTES:,}; "
        f"set {MAX_RESULT_BYTES_ENV} to change it)"
    )


def past_timeout(timeout: float | None, decided: str = WALL_CLOCK) -> QueryTimeout:
    """The outcome of a request whose child was killed at its deadline (`decided`: the time
    that was spent, as `timeouts.Budget.spent` says it)."""
    return timed_out(timeout, decided)


def exit_reason(code: int | None) -> str:
    """A child's end in words, from its exit code (negative: the signal that ended it)."""
    if code is None:
        return "no exit status"
    if code == -9:
        return "killed by signal 9, e.g. out of memory"
    return f"signal {-code}" if code < 0 else f"exit status {code}"
