"""BIRD scoring: execution match (`evaluate`), mini-dev's Soft-F1, R-VES and tables
(`metrics`) and whole runs kept by their inputs (`run_cache`)."""
