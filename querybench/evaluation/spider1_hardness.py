"""Spider 1.0 hardness now lives with the tasks (`tasks/spider1_hardness.py`); this name stays
until `evaluation/spider1.py` imports it from there."""

from __future__ import annotations

from querybench.tasks.spider1_hardness import spider1_hardness

__all__ = ["spider1_hardness"]
