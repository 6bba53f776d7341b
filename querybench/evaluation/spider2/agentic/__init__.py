"""Spider 2.0 DBT and agentic scoring: the eval config's checks against a gold DuckDB or answer
(`score`, `compare`, `tables`, `text`), a DBT outputs folder (`dbt`) and the official agentic
submission layout (`submission`, `instance`, `evaluate`)."""
