"""The `vf-run` console script (`querybench.envs.vf_run`)."""

from querybench.envs.vf_run import main

__all__ = ["main"]
