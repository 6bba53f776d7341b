"""How an agent episode ended: one value per rule of the loop, read by the trajectory, the run
record and the report's status table (which lists every one, counted or not)."""

from __future__ import annotations

from enum import StrEnum


class AgentStatus(StrEnum):
    TERMINATED = "terminated"  # Terminate: the answer given
    FAILED = "failed"  # FAIL: the agent gave up
    MAX_STEPS = "max_steps"  # the step cap reached
    REPEATED = "repeated"  # the same action three times in a row
    ACTION_TIMEOUT = "action_timeout"  # an action ran past its time limit (the paper's rule)
    ERROR = "error"  # an exception ended it (the model, a refused answer, a full workspace)


__all__ = ["AgentStatus"]
