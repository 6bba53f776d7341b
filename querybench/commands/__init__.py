"""CLI commands, one module each; `querybench.cli` registers them."""
