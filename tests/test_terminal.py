"""`Terminal` writes the very bytes a rich `Console` writes, with or without rich.

Each case prints through `Terminal` and through rich's own calls (the ones eval made before
`Terminal`: `Console.print`, a `Table` with sections, the transient `Progress`) onto streams
that are no terminal, at several widths, and compares the text; the plain cases are also
checked to be drawn without rich.
"""

from __future__ import annotations

import io
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from querybench.report import terminal
from querybench.report.terminal import Column, Terminal

WIDTHS = [20, 40, 80, 120]
# Letters, digits, punctuation rich reads as markup, emoji or escapes, spaces, tabs, non-ASCII.
TEXT = st.one_of(
    st.text(alphabet="ab Z09-_/.%(),", max_size=130),  # mostly plain: drawn without rich
    st.text(alphabet="ab Z09:-_[]/\\.%()…é\t\n😀", max_size=60),
)


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def _ours(width: int, draw: object) -> str:
    out = io.StringIO()
    old, sys.stdout = sys.stdout, out
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("COLUMNS", str(width))
            draw(Terminal())  # type: ignore[operator]
    except Exception as exc:  # a markup error: rich's own, raised alike
        return repr(exc)
    finally:
        sys.stdout = old
    return out.getvalue()


def _rich(width: int, draw: object) -> str:
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(width))
        try:
            draw(Console(file=out))  # type: ignore[operator]
        except Exception as exc:
            return repr(exc)
    return out.getvalue()


@settings(max_examples=300, deadline=None)
@given(text=TEXT, soft_wrap=st.booleans(), width=st.sampled_from(WIDTHS))
def test_print_is_richs(text: str, soft_wrap: bool, width: int) -> None:
    ours = _ours(width, lambda t: t.print(text, literal=True, soft_wrap=soft_wrap))
    assert ours == _rich(width, lambda c: c.print(escape(text), soft_wrap=soft_wrap))
    ours = _ours(width, lambda t: t.print(text, markup=False, highlight=False, soft_wrap=True))
    assert ours == _rich(width, lambda c: c.print(text, markup=False, soft_wrap=True))


@settings(max_examples=300, deadline=None)
@given(text=TEXT, width=st.sampled_from(WIDTHS))
def test_markup_text_and_labels_are_richs(text: str, width: int) -> None:
    assert _ours(width, lambda t: t.print(text)) == _rich(width, lambda c: c.print(text))
    ours = _ours(width, lambda t: t.error(text))
    assert ours == _rich(width, lambda c: c.print(f"[red]error:[/red] {escape(text)}"))
    ours = _ours(width, lambda t: t.warning(text))
    assert ours == _rich(width, lambda c: c.print(f"[yellow]warning:[/yellow] {escape(text)}"))


CELL = st.one_of(
    st.sampled_from(["all tasks", "submitted", "simple", "100.00", "7", "", "sqlite"]),
    st.text(alphabet="ab Z09:[]…é", max_size=14),
)


@settings(max_examples=300, deadline=None)
@given(
    title=st.one_of(st.just("BIRD execution match"), st.text(alphabet="ab (=)", max_size=70)),
    justify=st.lists(st.sampled_from(["left", "right"]), min_size=1, max_size=5),
    data=st.data(),
    width=st.sampled_from(WIDTHS),
)
def test_table_is_richs(title: str, justify: list[str], data: st.DataObject, width: int) -> None:
    columns = [Column(f"col {i}", j) for i, j in enumerate(justify)]  # type: ignore[arg-type]
    row = st.lists(CELL, min_size=len(columns), max_size=len(columns))
    sections = data.draw(st.lists(st.lists(row, max_size=3), max_size=3))

    def rich_table(console: Console) -> None:
        table = Table(title=title)
        for column in columns:
            table.add_column(column.header, justify=column.justify)
        for section in sections:
            for cells in section:
                table.add_row(*cells)
            if section:
                table.add_section()
        console.print(table)

    ours = _ours(width, lambda t: t.table(title, columns, sections))
    if terminal.table_width([c.header for c in columns], sections) <= width:
        assert ours == _rich(width, rich_table)
    else:  # rich would cut cells: stacked instead
        assert ours == terminal.stacked(title, [c.header for c in columns], sections, width) + "\n"


@pytest.mark.parametrize("width", [30, 40, 50])
def test_a_summary_on_a_narrow_console_keeps_every_score_whole(width: int) -> None:
    columns = [Column("group"), Column("n", "right"), Column("score %", "right")]
    columns += [Column("official %", "right"), Column("strict %", "right")]
    sections = [
        [
            ["all tasks", "547", "0.18", "0.18", "0.18"],
            ["submitted", "6", "16.67", "16.67", "16.67"],
        ],
        [["medium", "246", "0.41", "0.41", "0.41"]],
    ]
    out = _ours(
        width, lambda t: t.table("spider2-lite (exec_result, score = official)", columns, sections)
    )
    assert "…" not in out and all(len(line) <= width for line in out.splitlines()[1:])
    for line in ["submitted: n 6,", "score % 16.67", "official % 16.67", "strict % 16.67"]:
        assert line in out


def test_a_summary_table_is_drawn_without_rich() -> None:
    columns = [Column("group"), Column("n", "right"), Column("score %", "right")]
    sections = [[["all tasks", "100", "100.00"], ["submitted", "100", "100.00"]], []]
    drawn = terminal._plain_table("BIRD execution match", columns, sections, 80)
    assert drawn is not None and drawn.splitlines()[0] == "    BIRD execution match     "


@pytest.mark.parametrize("fails", [False, True])
def test_progress_off_a_terminal_is_richs(fails: bool) -> None:
    def ours(t: Terminal) -> None:
        with pytest.raises(ValueError) if fails else _nothing(), t.progress("running") as bar:
            bar.set_total(3)
            bar.advance()
            if fails:
                raise ValueError

    def rich_progress(console: Console) -> None:
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn())
        more = (MofNCompleteColumn(), TimeElapsedColumn())
        bar = Progress(*columns, *more, console=console, transient=True)
        with pytest.raises(ValueError) if fails else _nothing(), bar:
            task = bar.add_task("running", total=None)
            bar.update(task, total=3)
            bar.advance(task)
            if fails:
                raise ValueError

    assert _ours(80, ours) == _rich(80, rich_progress) == "\n"


def test_a_terminal_or_forced_colour_goes_to_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    t = Terminal()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert t._plain_width() == 80
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert t._plain_width() is None
    monkeypatch.delenv("FORCE_COLOR")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Tty())
    assert t._plain_width() is None


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _Events(io.StringIO):
    """A stream that logs its writes and flushes."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def write(self, text: str) -> int:
        self.events.append("write")
        return super().write(text)

    def flush(self) -> None:
        self.events.append("flush")


def test_each_print_is_flushed_as_rich_flushes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Buffered stdout and stderr on one pipe then interleave as they did under rich."""
    for draw in (
        lambda t: t.print("scored"),
        lambda t: t.error("no such file"),
        lambda t: t.table("t", [Column("a")], [[["1"]]]),
    ):
        ours, theirs = _Events(), _Events()
        monkeypatch.setattr(sys, "stdout", ours)
        draw(Terminal())
        assert ours.events[-1] == "flush"
        rich = Console(file=theirs)
        rich.print("scored")
        assert theirs.events[-1] == "flush"


def test_a_terminal_gets_richs_progress_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where rich would draw (here forced), the bar is rich's, with its count and total."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with Terminal(stderr=True).progress("scoring") as bar:
        bar.set_total(3)
        bar.advance()
    drawn = sys.stderr.getvalue()
    assert "scoring" in drawn and "1/3" in drawn


def test_a_stacked_table_is_printed_as_it_is_on_richs_path_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich's path, as on a terminal
    columns = [Column("group"), Column("n", "right"), Column("score %", "right")]
    sections = [[[":a:", "[b]", "12.50"]]]
    out = _ours(20, lambda t: t.table("title", columns, sections))
    assert ":a:: n [b], score % 12.50" in out.replace("\n  ", " ").replace(",\n", ", ")


def test_a_literal_line_with_brackets_is_written_without_rich() -> None:
    """The summary's error lines (`condition_cols=[]`) are literal: rich would print their
    `escape` as the text itself, so they need no rich console."""
    line = "  wrong_result 3: prediction 1x2 matches no gold (condition_cols=[], [x])"
    t = Terminal()
    out = _ours(80, lambda t: t.print(line, literal=True, soft_wrap=True))
    assert out == _rich(80, lambda c: c.print(escape(line), soft_wrap=True)) == line + "\n"
    old, sys.stdout = sys.stdout, io.StringIO()
    try:
        t.print(line, literal=True, soft_wrap=True)
    finally:
        sys.stdout = old
    assert t._rich is None
