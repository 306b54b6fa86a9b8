"""Loggers that load the stdlib `logging` package only when something is logged.

`logging` (with the traceback, linecache, tokenize and string modules it
imports) is a cost at every cold CLI start, and most commands never log. A
module on a command's path therefore takes its logger from `get_logger`: a
stand-in that imports `logging` and fetches `logging.getLogger(name)` the
first time one of its methods is used, and passes every call on from then.

The CLI's `basicConfig` waits in the same way (`configure`): it runs when
`logging` is first loaded through a logger here, or at once when `logging` is
loaded already. A record a library logs through `logging` before any memhtml
logger has been used finds no configuration yet (Python's last-resort handler
prints it, without the `memhtml:` prefix); the CLI configures at once when
MEMHTML_LOG asks for a level, so asked-for records are never lost.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logging import Logger

_pending: dict[str, Any] | None = None


class _LazyLogger:
    """`logging.getLogger(name)`, fetched on first use."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Logger | None = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            logger = self._logger = _logging().getLogger(self.name)
        return getattr(logger, attr)


def get_logger(name: str) -> Logger:
    """The logger `name`, with `logging` imported only when it is first used."""
    lazy: Any = _LazyLogger(name)
    return lazy  # typed as the Logger it stands in for


def configure(*, now: bool = False, **basic_config: Any) -> None:
    """`logging.basicConfig(**basic_config)`, run when `logging` is first loaded through a
    logger here; at once when `now` or when `logging` is loaded already."""
    global _pending  # noqa: PLW0603 (the one pending configuration of this process)
    if now or "logging" in sys.modules:
        _pending = None
        _logging().basicConfig(**basic_config)
    else:
        _pending = basic_config


def _logging() -> Any:
    global _pending
    import logging

    if _pending is not None:
        pending, _pending = _pending, None
        logging.basicConfig(**pending)
    return logging
