"""A child's reply frame is read within bounds (`Supervisor.check`): a child that writes a
length and then stops writing (taken over, or stopped with SIGSTOP) is killed and settled
within its step's deadline + grace, or `REPLY_STALL_S` after its last byte, and a length past
the reply cap is refused before anything of it is allocated; an honest child's replies, large
ones and the 8-byte length's frame included, come through as before."""

from __future__ import annotations

import gc
import os
import signal
import struct
import threading
import time
import tracemalloc
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

import pytest

from querybench.engines import supervisor
from querybench.engines.child import WORK, Child, ChildSetup
from querybench.engines.supervision import max_reply_bytes
from querybench.engines.supervisor import Launch, Reply, Stopped, Supervisor
from querybench.engines.timeouts import GRACE_S
from querybench.errors import ResultTooManyBytes

# A deadline the hostile step announces (seconds); the kill comes GRACE_S later.
DEADLINE = 0.3
# What a loaded machine may add to a bound before the parent looks again.
SLACK = 2.0
# Past this the read is taken to hang (today's unbounded `recv_bytes`): the child is killed
# from the test so that the test fails rather than waits for ever.
DID_NOT_HANG = 15.0


def _replies_pipe() -> Connection:
    """In the child: its end of the replies pipe, as a child taken over would find it."""
    ends = [
        o
        for o in gc.get_objects()
        if isinstance(o, Connection) and not o.closed and o.writable and not o.readable
    ]
    assert len(ends) == 1
    return ends[0]


def _frame(value: Any, *, long: bool = False) -> bytes:
    """`value` framed as multiprocessing frames it (`long`: the 8-byte length's frame)."""
    data = bytes(ForkingPickler.dumps(value))
    if long:
        return struct.pack("!i", -1) + struct.pack("!Q", len(data)) + data
    return struct.pack("!i", len(data)) + data


class Framer:
    """A work kind for the tests, a child taken over writing to the replies pipe itself:
    `(frame, deadline, then)` announces a step of `deadline` (None: none), writes `frame`
    (`b""`: a framed reply to this message, `None` the 8-byte length's), then `sleep`s,
    `stop`s itself (SIGSTOP), `drip`s `rest` a byte at a time, or `return`s honestly."""

    def __init__(self, child: Child) -> None:
        self.child = child

    def __call__(
        self, frame: bytes | None, deadline: float | None, then: str, rest: bytes = b""
    ) -> Any:
        progress = self.child.progress
        progress.index = 5
        if deadline is not None:
            progress.step(WORK, deadline)
        if not frame:
            frame = _frame((progress.number, "ok", "framed"), long=frame is None)
        fd = _replies_pipe().fileno()
        os.write(fd, frame)
        if then == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif then == "drip":
            for byte in rest:
                time.sleep(0.4)
                os.write(fd, bytes([byte]))
        elif then == "return":
            return "honest"
        time.sleep(600)
        return None


class Large:
    """A work kind for the tests: `(size)` answers `size` bytes."""

    def __init__(self, child: Child) -> None:
        self.child = child

    def __call__(self, size: int) -> Any:
        return b"x" * size


def _child(launch: Launch, work: str = "Framer", **setup: Any) -> Supervisor:
    return Supervisor(
        ChildSetup(ignore_ctrl_c=True, work=f"tests.test_engines_reply_frames:{work}", **setup),
        launch=launch,
    )


def _settled(child: Supervisor) -> tuple[Reply | Stopped, float]:
    """`child.receive()` and the seconds it took, read in a thread: a read that has not
    returned in `DID_NOT_HANG` s has its child killed, and the test fails."""
    out: list[Any] = []

    def receive() -> None:
        try:
            out.append(child.receive())
        except BaseException as exc:
            out.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    thread.join(DID_NOT_HANG)
    took = time.monotonic() - started
    if thread.is_alive():
        child.abort()
        thread.join(10.0)
        pytest.fail(f"the reply read did not return in {DID_NOT_HANG} s")
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0], took


def _settled_traced(child: Supervisor) -> tuple[Reply | Stopped, float, int]:
    """`_settled`, and the peak of this process's traced allocations while it read."""
    tracemalloc.start()
    try:
        stopped, took = _settled(child)
        return stopped, took, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _fresh_child_answers(child: Supervisor) -> None:
    """The next message goes to a fresh child, which answers."""
    child.closed = False
    number = child.send("work", b"", None, "return")
    reply = child.receive()
    assert not isinstance(reply, Stopped) and reply[0] == number


@pytest.mark.parametrize("launch", ["fork", "subprocess"])
def test_a_reply_stalled_after_its_length_is_settled_at_the_steps_deadline_and_grace(
    launch: Launch,
) -> None:
    child = _child(launch)
    try:
        number = child.send("work", struct.pack("!i", 100) + b"abc", DEADLINE, "sleep")
        stopped, took = _settled(child)
        assert isinstance(stopped, Stopped) and not stopped.killed
        assert (stopped.number, stopped.index, stopped.step) == (number, 5, WORK)
        assert str(stopped.ended()).startswith(
            "the query's process ended (killed: its reply stalled: 3 of 100 bytes came in "
        )
        assert took < DEADLINE + GRACE_S + SLACK
        assert child.pid is None  # killed
        _fresh_child_answers(child)
    finally:
        child.close()


def test_a_reply_stalled_with_no_step_running_is_settled_without_allocating_its_length() -> None:
    child = _child("fork")
    declared = max_reply_bytes() - 1  # under the cap: read as it comes, never allocated whole
    try:
        child.send("work", struct.pack("!i", declared) + b"a", None, "sleep")
        stopped, took, peak = _settled_traced(child)
        assert isinstance(stopped, Stopped)
        assert f"its reply stalled: 1 of {declared:,} bytes came in" in stopped.reason
        assert supervisor.REPLY_STALL_S <= took < supervisor.REPLY_STALL_S + SLACK
        assert peak < 16 * 1024**2
        _fresh_child_answers(child)
    finally:
        child.close()


def test_a_child_stopped_with_sigstop_halfway_through_its_reply_is_killed_and_settled() -> None:
    child = _child("subprocess")
    try:
        child.send("work", _frame((0, "ok", "x" * 1000))[:500], None, "stop")
        stopped, took = _settled(child)
        assert isinstance(stopped, Stopped)
        assert "its reply stalled: 496 of " in stopped.reason
        assert took < supervisor.REPLY_STALL_S + SLACK
        _fresh_child_answers(child)
    finally:
        child.close()


def test_a_reply_dripped_a_byte_at_a_time_is_settled_at_its_frames_bound() -> None:
    child = _child("fork")
    try:
        child.send("work", struct.pack("!i", 200), None, "drip", b"y" * 200)
        stopped, took = _settled(child)
        assert isinstance(stopped, Stopped)
        assert (
            "its reply stalled: " in stopped.reason and " of 200 bytes came in " in stopped.reason
        )
        # No byte is ever `REPLY_STALL_S` late: the frame's own bound settles it.
        assert took < supervisor.REPLY_STALL_S + 200 / supervisor.REPLY_BYTES_PER_S + SLACK
        _fresh_child_answers(child)
    finally:
        child.close()


@pytest.mark.parametrize(
    "header",
    [struct.pack("!i", 0x7FFFFFFF), struct.pack("!i", -1) + struct.pack("!Q", 2**62)],
    ids=["2-GiB", "8-byte-length"],
)
def test_a_length_past_the_reply_cap_is_refused_at_once_without_allocating_it(
    header: bytes,
) -> None:
    child = _child("fork")
    try:
        number = child.send("work", header, 60.0, "sleep")
        stopped, took, peak = _settled_traced(child)
        assert isinstance(stopped, Stopped) and (stopped.number, stopped.index) == (number, 5)
        declared = struct.unpack("!i", header[:4])[0]
        if declared == -1:
            declared = 2**62
        assert stopped.reason == (
            f"killed: its reply was refused: it declares {declared:,} bytes, past the reply "
            f"cap of {max_reply_bytes():,}"
        )
        assert took < SLACK
        assert peak < 16 * 1024**2
        _fresh_child_answers(child)
    finally:
        child.close()


def test_a_negative_length_is_refused() -> None:
    child = _child("fork")
    try:
        child.send("work", struct.pack("!i", -2), None, "sleep")
        stopped, _ = _settled(child)
        assert isinstance(stopped, Stopped)
        assert stopped.reason == "killed: its reply was refused: it declares -2 bytes"
    finally:
        child.close()


def test_the_8_byte_lengths_frame_is_read_as_multiprocessing_writes_it() -> None:
    child = _child("fork")
    try:
        number = child.send("work", None, None, "return")
        assert child.receive() == (number, "ok", "framed")
        assert child.receive() == (number, "ok", "honest")
    finally:
        child.close()


@pytest.mark.parametrize("launch", ["fork", "subprocess"])
@pytest.mark.parametrize("size", [0, 16_384, 16_385, 5 * 1024**2 + 3])
def test_honest_replies_small_and_large_come_through(launch: Launch, size: int) -> None:
    child = _child(launch, "Large")
    try:
        for _ in range(2):
            number = child.send("work", size)
            assert child.receive() == (number, "ok", b"x" * size)
    finally:
        child.close()


def test_a_reply_past_the_cap_is_a_too_large_error_and_the_child_serves_on() -> None:
    child = _child("fork", "Large", reply_bytes=100_000)
    try:
        number = child.send("work", 10)
        assert child.receive() == (number, "ok", b"x" * 10)
        pid = child.pid
        number = child.send("work", 200_000)
        reply = child.receive()
        assert not isinstance(reply, Stopped) and reply[:2] == (number, "error")
        assert isinstance(reply[2], ResultTooManyBytes)
        assert str(reply[2]).startswith("the reply holds 200,0")
        assert "bytes, past the reply cap of 100,000 bytes" in str(reply[2])
        number = child.send("work", 10)
        assert child.receive() == (number, "ok", b"x" * 10)
        assert child.pid == pid
    finally:
        child.close()
