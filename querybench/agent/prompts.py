"""The agent's prompts, written for querybench after the Spider-Agent paper's: a system prompt
describing the setting and the reply format, and the action space, one entry per action."""

from __future__ import annotations

SYSTEM = """You are a data scientist working in a folder, /workspace, to answer a question about \
a {dialect} database. The task is described in /workspace/README.md:

{readme}
Work step by step. In each reply, first explain briefly what you will do and why, then give \
exactly one action. The format of every reply is:

Thought: your reasoning for this step
Action: the one action to take, written as a call

After each action you will receive an Observation with its result. Explore the database before \
you answer: list its tables, look at the columns and a few rows of the tables you need, and try \
your query. When the answer is ready, save the final query's result to a CSV file with \
ExecuteSQL(..., is_save=True, save_path="result.csv") and finish with \
Terminate(output="result.csv"). If a short text answers the question better, Terminate with \
that text instead. You have at most {max_steps} steps.

{actions}"""

ACTION_SPACE = """## Actions

Write string arguments in double quotes; escape a double quote inside a value as \\" (SQL \
may span several lines).

* ExecuteSQL(sql_query="...", is_save=False, save_path="")
  Run one SQL statement on the database. With is_save=False the first rows are printed; with \
is_save=True the whole result is saved as a CSV file at save_path.
  Example: Action: ExecuteSQL(sql_query="SELECT count(*) FROM singer", is_save=True, \
save_path="result.csv")
* GetTables(schema_name="")
  List the tables of the database (of one schema when schema_name is given).
  Example: Action: GetTables()
* GetTabInfo(table="...")
  Show the columns and their types of one table.
  Example: Action: GetTabInfo(table="singer")
* SampleRows(table="...", row_number=3, save_path="")
  A few rows of a table as JSON, saved at save_path when given.
  Example: Action: SampleRows(table="singer", row_number=3, save_path="singer_rows.json")
* Bash(code="...")
  Run a shell command in /workspace (no network; files outside /workspace are read-only or \
hidden).
  Example: Action: Bash(code="ls -la")
* CreateFile(filepath="...", code="...")
  Create a new file with the given content.
  Example: Action: CreateFile(filepath="query.sql", code="SELECT 1")
* EditFile(filepath="...", code="...")
  Replace the whole content of an existing file.
* Terminate(output="...")
  Finish: output is the answer text, or the path of the file holding the answer \
(a CSV of the result, or a .sql file with the final query).
  Example: Action: Terminate(output="result.csv")
* FAIL(reason="...")
  Give up when the question cannot be answered."""

OBSERVATION = "Observation: {observation}"

UNREADABLE = (
    "Your reply could not be read ({error}). Reply with one `Thought: ...` line and then one "
    '`Action: Name(arg="...")` line, with one of the actions listed.'
)

TOOL_SYSTEM = """You are a data scientist working in a folder, /workspace, to answer a question \
about a {dialect} database. The task is described in /workspace/README.md:

{readme}
Work step by step: in each reply, say briefly what you will do and why, then call exactly one \
of the tools; its result comes back as the tool's answer. Explore the database before you \
answer: list its tables, look at the columns and a few rows of the tables you need, and try \
your query. When the answer is ready, save the final query's result with ExecuteSQL \
(is_save=true, save_path="result.csv") and call Terminate with output="result.csv". If a \
short text answers the question better, Terminate with that text instead. Call FAIL when the \
question cannot be answered. You have at most {max_steps} steps."""

NO_TOOL_CALL = (
    "Your reply called no tool. Call exactly one of the tools offered; Terminate ends the task."
)

NOT_RUN = "Not run: one tool call per step; only the first call of a reply is executed."
