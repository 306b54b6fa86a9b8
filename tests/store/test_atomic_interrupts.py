"""An atomic write interrupted anywhere (SIGTERM raised as an exception) leaves no temp file and
says it was interrupted (issue 29: a killed sleep merge left a `.memhtml-*.tmp` behind).

On 7a6261e an interrupt landing just after the temp file was opened orphaned it (884 of 3,762
interrupted writes here), and one landing just after the descriptor was closed closed it a
second time, turning the interrupt into `OSError: [Errno 9] Bad file descriptor`.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path
from types import FrameType

from memhtml.store.files import write_atomic


class Interrupted(BaseException):
    """What the CLI's SIGTERM handler raises (memhtml.ops.signals.Terminated), in small."""


def test_an_interrupt_anywhere_in_an_atomic_write_leaves_nothing_behind(tmp_path: Path) -> None:
    armed = [False]

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        if armed[0]:
            armed[0] = False
            raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    rng = random.Random(29)
    old, new = b"old " * 500, b"new " * 500
    targets = [tmp_path / f"m{i}.html" for i in range(40)]
    for target in targets:
        target.write_bytes(old)
    interrupted = 0
    try:
        for n in range(3000):
            try:
                armed[0] = True
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.00001, 0.0002))
                write_atomic(targets[n % len(targets)], new if n % 2 else old)
                armed[0] = False
            except Interrupted:  # never an OSError standing in for it
                interrupted += 1
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert interrupted > 0
    assert list(tmp_path.glob(".memhtml-*.tmp")) == []
    assert {t.read_bytes() for t in targets} <= {old, new}  # whole files, never torn
