"""What a person at a terminal reads: each command's text view, and errors as text.

`memhtml.cli.main` decides *when* (stdout is a terminal and neither --json nor
--dense was given: `main.on_terminal`); this package decides *what*. A
command's view is named here by the command's name and imported only when
it is shown, so a piped command (an agent's) never loads any of it. A
handler module's own `human_<handler>` function is the older spelling of
the same thing and is still honoured (sleep's views live beside its
handlers). The shared pieces (clipping, dates, columns) are memhtml.cli.text.

A view is a convenience: if one fails on data it did not expect, the
command's envelope is printed instead (the command has already done its
work, and saying it failed would be false).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Final

_V = "memhtml.cli.views"

# command name -> "module:function" of its view
VIEWS: Final[dict[str, str]] = {
    "agents-doc": f"{_V}.meta:agents_doc",
    "eval fixture": f"{_V}.meta:eval_fixture",
    "eval merge-safety": f"{_V}.meta:merge_safety",
    "doctor": f"{_V}.doctor:doctor",
    "init": f"{_V}.memory:init",
    "write": f"{_V}.memory:write",
    "apply": f"{_V}.memory:apply",
    "read": f"{_V}.memory:read",
    "list": f"{_V}.memory:list_",
    "correct": f"{_V}.memory:correct",
    "archive": f"{_V}.memory:archive",
    "link": f"{_V}.memory:link",
    "search": f"{_V}.query:search",
    "recall": f"{_V}.query:recall",
    "reinforce": f"{_V}.query:reinforce",
    "neighbors": f"{_V}.query:neighbors",
    "resolve": f"{_V}.query:resolve",
    "status": f"{_V}.status:status",
    "entity activity": f"{_V}.status:entity_activity",
    "index rebuild": f"{_V}.status:index_report",
    "index update": f"{_V}.status:index_report",
    "index embed": f"{_V}.status:index_report",
    "index status": f"{_V}.status:index_status",
    "task add": f"{_V}.tasks:task_add",
    "task status": f"{_V}.tasks:task_status",
    "task list": f"{_V}.tasks:task_list",
    "sync": f"{_V}.sharing:sync",
    "remote add": f"{_V}.sharing:remote_add",
    "state export": f"{_V}.sharing:state_export",
    "state import": f"{_V}.sharing:state_import",
    "trace links": f"{_V}.trace:links",
}

# error code -> the view of its details, where they are a report a person wants whole
ERROR_DETAILS: Final[dict[str, str]] = {
    "ERR_UNHEALTHY": f"{_V}.doctor:doctor",
    "ERR_SYNC_CONFLICT": f"{_V}.sharing:conflicts",
    "ERR_PARTIAL_FAILURE": f"{_V}.memory:apply",
}


def _load(spec: str) -> Callable[[dict[str, Any]], str]:
    module, _, name = spec.partition(":")
    view: Callable[[dict[str, Any]], str] = getattr(importlib.import_module(module), name)
    return view


def view_for(command: str, handler: str) -> Callable[[dict[str, Any]], str] | None:
    """The text view of `command` (its handler's `human_*` when this package has none)."""
    spec = VIEWS.get(command)
    if spec is not None:
        return _load(spec)
    module, _, func = handler.partition(":")
    found: Callable[[dict[str, Any]], str] | None = getattr(
        importlib.import_module(module), f"human_{func}", None
    )
    return found


def render(command: str, handler: str, data: dict[str, Any]) -> str | None:
    """`data` as text for a person, or None: no view, or the view failed (the envelope then)."""
    view = view_for(command, handler)
    if view is None:
        return None
    try:
        return view(data)
    except Exception:  # a view's bug must not turn a done command into a failure
        from memhtml.contracts.logs import get_logger

        get_logger("memhtml").warning(
            "the text view of %s failed; the JSON envelope follows", command, exc_info=True
        )
        return None


# Control characters a terminal would obey, shown instead as what they are: a memory's title or
# claim (a hand edit, a teammate's sync, an HTML character reference such as &#x1b;) must not
# clear the screen, retitle the window or move the cursor of the person reading it. C0 controls
# but tab and newline in caret notation (ESC is ^[), DEL as ^?, the C1 controls (0x9b is an
# 8-bit CSI) and the bidirectional overrides (which reorder what a line appears to say) as <U+..>.
_SHOWN: Final[dict[int, str]] = {
    **{c: f"^{chr(c + 64)}" for c in range(0x20) if c not in (0x09, 0x0A)},
    0x7F: "^?",
    **{c: f"<U+{c:04X}>" for c in range(0x80, 0xA0)},
    **{c: f"<U+{c:04X}>" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}


def for_terminal(text: str) -> str:
    """`text` with every character a terminal would act on made visible (see _SHOWN)."""
    return text.translate(_SHOWN)


def error_text(payload: dict[str, Any]) -> str:
    """A failure envelope as text: the message, the code, what the details say, what to try."""
    from memhtml.cli.views.errors import error_text as text

    def report(code: str) -> Callable[[dict[str, Any]], str] | None:
        spec = ERROR_DETAILS.get(code)
        return None if spec is None else _load(spec)

    return text(payload, report)
