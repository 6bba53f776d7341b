"""Spider 2.0 scoring: lite and snow's result CSVs (`evaluate`), their two table comparisons
(`official`, `strict`), the CSV readers, the large-file path and the caches; DBT and agentic
answers in `agentic`."""
