"""The agent's run options (`--max-steps`, `--action-timeout`, ...): one declaration read by the
`run` command, the resume identity, `AgentConfig` and `WorkspaceOptions` (their defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from querybench.declared import Declared, option


@dataclass(frozen=True)
class AgentOptions(Declared):
    """Options of `spider-agent` and `tool-agent`; every one is part of the run's identity."""

    max_steps: int = option(
        30, min=1, identity=True, help="Agent: model replies per task at most (30)."
    )
    action_timeout: float = option(
        120.0, min=0.1, identity=True, help="Agent: seconds per action at most (120)."
    )
    continue_after_timeout: bool = option(
        False,
        identity=True,
        before_it=True,  # a run folder from before the option went on after a timeout
        help="Agent: an action that runs past --action-timeout is stopped and the episode goes "
        "on (the official code's way); by default it ends the episode as action_timeout, the "
        "paper's rule.",
    )
    max_observation_chars: int = option(
        5000,
        min=1,
        identity=True,
        help="Agent: observations are cut at this many characters (5000).",
    )
    unsafe_bash: bool = option(
        False,
        identity=True,
        help="Agent: run Bash actions unsandboxed on this machine where bubblewrap cannot "
        "sandbox them (otherwise the agent refuses Bash).",
    )
    # library only: the history kept for the model, in tokens
    context_tokens: int = option(100_000, flag="", identity=True)
