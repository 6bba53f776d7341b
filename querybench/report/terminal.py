"""Printing as rich prints, without importing rich for plain output (eval's start-up).

Importing rich's console, table and progress costs an eval command about 0.02 CPU seconds,
a sixth of a small job. Where rich would write plain text (the stream is not a terminal, no
variable forces colour) and the text is plain (printable, no markup, no emoji code, no line
wider than the console), `Terminal` writes the very bytes rich would; anything else goes to a
rich `Console`, imported then. tests/test_terminal.py holds both to the same bytes. A table
wider than the console is neither's: rich would cut its cells (the scores), so it is `stacked`.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from rich.console import Console

# rich's own pattern of an emoji code (rich/_emoji_replace.py): such text goes to rich.
_EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
# Variables with which rich treats a stream that is no terminal as one (or may).
_RICH_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")

Justify = Literal["left", "right"]


@dataclass(frozen=True)
class Bar:
    """The task of a `Terminal.progress` bar: one step done, or the total once known."""

    advance: Callable[[], None]
    set_total: Callable[[int], None]


@dataclass(frozen=True)
class Column:
    header: str
    justify: Justify = "left"


def _plain_text(text: str, *, soft_wrap: bool, literal: bool = False) -> bool:
    """Whether rich prints `text` as it is: no markup (a bracket is text when it is
    `literal`: rich prints its `escape` as the text; a backslash is not always), emoji code,
    control code, tab or trailing space (rich strips some); only ASCII where rich may wrap
    (its width is then the length)."""
    if "\\" in text or (not literal and "[" in text) or _EMOJI_CODE.search(text):
        return False
    lines = text.split("\n")
    if not all(line.isprintable() and not line.endswith(" ") for line in lines):
        return False
    return soft_wrap or text.isascii()


class Terminal:
    """One of the standard streams, written as a rich `Console` on it would write."""

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self._rich: Console | None = None

    @property
    def file(self) -> TextIO:
        return sys.stderr if self.stderr else sys.stdout

    @property
    def rich(self) -> Console:
        """The rich console on the same stream (rich imported on first use)."""
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(stderr=self.stderr)
        return self._rich

    def _write(self, text: str) -> None:
        """Written and flushed, as rich does after each print (so that stdout and stderr
        interleave in a shared pipe as they did)."""
        self.file.write(text)
        self.file.flush()

    def _plain_width(self) -> int | None:
        """The console width rich would use when it writes plain text here, else None."""
        if os.name == "nt" or hasattr(builtins, "get_ipython"):
            return None
        if any(name in os.environ for name in _RICH_TERMINAL_VARIABLES):
            return None
        file = self.file
        if getattr(file, "rich_proxied_file", None) is not None:
            return None
        try:
            if file.isatty() or not (file.encoding or "utf-8").lower().startswith("utf"):
                return None
        except (AttributeError, ValueError):
            return None
        columns = os.environ.get("COLUMNS")
        if columns is not None and columns.isdigit():
            return int(columns) or None
        for fd in (0, 1, 2):  # rich asks each standard stream for a terminal size
            try:
                width = os.get_terminal_size(fd).columns
            except (AttributeError, ValueError, OSError):
                continue
            return width or 80
        return 80

    def print(
        self,
        text: str = "",
        *,
        literal: bool = False,
        markup: bool = True,
        highlight: bool | None = None,
        soft_wrap: bool = False,
    ) -> None:
        """`Console.print(text, markup=..., highlight=..., soft_wrap=...)`, of `escape(text)`
        with `literal`; plain text is written here."""
        width = self._plain_width()
        plain = width is not None and _plain_text(text, soft_wrap=soft_wrap, literal=literal)
        if plain and (soft_wrap or all(len(x) <= (width or 0) for x in text.split("\n"))):
            self._write(text + "\n")
            return
        if literal:
            from rich.markup import escape

            text = escape(text)
        self.rich.print(text, markup=markup, highlight=highlight, soft_wrap=soft_wrap)

    def error(self, message: str) -> None:
        self._labelled("error", "red", message)

    def warning(self, message: str) -> None:
        self._labelled("warning", "yellow", message)

    def _labelled(self, label: str, colour: str, message: str) -> None:
        width = self._plain_width()
        text = f"{label}: {message}"
        if width is not None and len(text) <= width and _plain_text(text, soft_wrap=False):
            self._write(text + "\n")
            return
        from rich.markup import escape

        self.rich.print(f"[{colour}]{label}:[/{colour}] {escape(message)}")

    def table(
        self, title: str, columns: Sequence[Column], sections: Sequence[Sequence[Sequence[str]]]
    ) -> None:
        """A rich `Table(title=...)` of `columns`, each section's rows followed by
        `add_section()`; drawn here when it fits the console and every cell is plain. A table
        wider than the console is `stacked` instead: rich would cut its cells (the scores)."""
        width = self._plain_width()
        headers = [c.header for c in columns]
        if table_width(headers, sections) > (self.rich.width if width is None else width):
            text = stacked(title, headers, sections, self.rich.width if width is None else width)
            if width is not None:
                self._write(text + "\n")
            else:  # as it is: no markup, no emoji code read in a cell (`:a:`)
                self.rich.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
            return
        drawn = None if width is None else _plain_table(title, columns, sections, width)
        if drawn is not None:
            self._write(drawn)
            return
        from rich.table import Table

        table = Table(title=title)
        for column in columns:
            table.add_column(column.header, justify=column.justify)
        for section in sections:
            for row in section:
                table.add_row(*row)
            if section:
                table.add_section()
        self.rich.print(table)

    @contextmanager
    def progress(self, title: str) -> Iterator[Bar]:
        """rich's transient progress bar (description, bar, count, time) with one task; off a
        terminal rich draws nothing and ends with an empty line, as this does without rich."""
        if self._plain_width() is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            with Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.rich,
                transient=True,
            ) as progress:
                # hidden until its total (or its first step) is known: drawn before, it read 0/?
                task = progress.add_task(title, total=None, visible=False)
                yield Bar(
                    lambda: progress.update(task, advance=1, visible=True),
                    lambda n: progress.update(task, total=n, visible=True),
                )
            return
        try:
            yield Bar(lambda: None, lambda _n: None)
        finally:
            self._write("\n")


def table_width(headers: Sequence[str], sections: Sequence[Sequence[Sequence[str]]]) -> int:
    """The width of a rich table of these cells (one line each) with none of them cut."""
    rows = [headers, *(row for section in sections for row in section)]
    widths = [max(len(row[i]) if i < len(row) else 0 for row in rows) for i in range(len(headers))]
    return sum(widths) + 3 * len(widths) + 1


def stacked(
    title: str,
    headers: Sequence[str],
    sections: Sequence[Sequence[Sequence[str]]],
    width: int,
) -> str:
    """A table too wide for the console as lines, a row each (`all tasks: n 547, score %
    0.18`), wrapped between its cells, never inside one; a blank line between sections."""
    blocks = []
    for section in sections:
        lines = []
        for row in section:
            label, *cells = row
            units = [f"{label}:"] + [
                f"{header} {cell}" for header, cell in zip(headers[1:], cells, strict=False) if cell
            ]
            lines.append(_wrapped(units, width))
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join([title, *blocks] if title else blocks)


def _wrapped(units: Sequence[str], width: int) -> str:
    """The label `units[0]`, then the other units joined by ", ", a line broken only between
    two of them (continued indented)."""
    lines = [units[0]]
    for index, unit in enumerate(units[1:]):
        separator = ", " if index else " "
        if len(lines[-1]) + len(separator) + len(unit) < width:
            lines[-1] += separator + unit
        else:
            lines[-1] += separator.rstrip()
            lines.append("  " + unit)
    return "\n".join(lines)


# rich's HEAVY_HEAD box: the top, the header's row, the line under it, a row, a section's end
# and the bottom, each as (left, fill, between columns, right).
_TOP, _HEAD, _HEAD_END = ("┏", "━", "┳", "┓"), ("┃", " ", "┃", "┃"), ("┡", "━", "╇", "┩")
_ROW, _SECTION, _BOTTOM = ("│", " ", "│", "│"), ("├", "─", "┼", "┤"), ("└", "─", "┴", "┘")


def _plain_table(
    title: str,
    columns: Sequence[Column],
    sections: Sequence[Sequence[Sequence[str]]],
    width: int,
) -> str | None:
    """The table as rich draws it off a terminal, or None where only rich can say."""
    header = [c.header for c in columns]
    rows = [row for section in sections for row in section]
    cells = [*header, title, *(cell for row in rows for cell in row)]
    if not all(_plain_text(c, soft_wrap=False) and c == c.strip() for c in cells):
        return None
    if any(len(row) != len(columns) for row in rows):
        return None
    widths = [max(len(r[i]) for r in [header, *rows]) + 2 for i in range(len(columns))]
    total = sum(widths) + len(widths) + 1
    if total > width or len(title) > total or not columns:
        return None

    def rule(box: tuple[str, str, str, str]) -> str:
        left, fill, between, right = box
        return left + between.join(fill * w for w in widths) + right + "\n"

    def line(box: tuple[str, str, str, str], row: Sequence[str]) -> str:
        padded = [
            " " + (c.rjust if col.justify == "right" else c.ljust)(w - 2) + " "
            for c, col, w in zip(row, columns, widths, strict=True)
        ]
        return box[0] + box[2].join(padded) + box[3] + "\n"

    left = (total - len(title)) // 2
    out = [" " * left + title + " " * (total - len(title) - left) + "\n"] if title else []
    out += [rule(_TOP), line(_HEAD, header), rule(_HEAD_END)]
    ends = {sum(len(s) for s in sections[: i + 1]) - 1 for i, s in enumerate(sections) if s}
    for index, row in enumerate(rows):
        out.append(line(_ROW, row))
        if index in ends and index != len(rows) - 1:
            out.append(rule(_SECTION))
    out.append(rule(_BOTTOM))
    return "".join(out)
