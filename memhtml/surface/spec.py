"""The shape of a command-table entry (data only, no parsing machinery).

The entries are NamedTuples, not frozen dataclasses: every cold CLI start
builds these classes, and a frozen dataclass generates its methods with `exec`
when it is created, a NamedTuple does not.
"""

from __future__ import annotations

import math
from typing import Any, Final, Literal, NamedTuple

ParamType = Literal["str", "int", "float", "bool"]


class Param(NamedTuple):
    """One positional argument or flag."""

    name: str
    help: str
    type: ParamType = "str"
    positional: bool = False
    required: bool = False
    multiple: bool = False
    default: Any = None
    choices: tuple[str, ...] | None = None
    flag: str | None = None  # defaults to --<name with dashes>
    metavar: str | None = None
    # Inclusive bounds of an int or float value: enforced before the handler
    # runs (ERR_INVALID_FLAG) and printed in the manifest, AGENTS.md and --help.
    minimum: float | None = None
    maximum: float | None = None
    # How many values a repeatable parameter takes at most (memhtml.contracts.limits):
    # enforced before the handler runs (ERR_INPUT_TOO_LARGE) and printed as `range` is.
    max_count: int | None = None

    @property
    def label(self) -> str:
        """How a message names this parameter: `--limit`, or `<path>` for a positional."""
        return f"<{self.name}>" if self.positional else self.cli_flag

    @property
    def range_text(self) -> str | None:
        """The bounds as people read them (`1..500`, `at least 0`); None when unbounded."""
        return describe_range(self.minimum, self.maximum)

    def out_of_range(self, value: float) -> bool:
        """True when `value` breaks the bounds (NaN breaks any bound)."""
        if math.isnan(value):
            return self.minimum is not None or self.maximum is not None
        return (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        )

    @property
    def cli_flag(self) -> str:
        """The long flag spelling, e.g. `--event-at`."""
        return self.flag or "--" + self.name.replace("_", "-")

    def describe(self) -> dict[str, Any]:
        """This parameter as it appears in the manifest."""
        out: dict[str, Any] = {
            "name": self.name if self.positional else self.cli_flag,
            "kind": "argument" if self.positional else "flag",
            "type": self.type,
            "required": self.required,
            "repeatable": self.multiple,
            "help": self.help,
        }
        if self.default is not None and not self.multiple:
            out["default"] = self.default
        if self.choices:
            out["choices"] = list(self.choices)
        if self.metavar:
            out["metavar"] = self.metavar
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.max_count is not None:
            out["max_count"] = self.max_count
        return out


def describe_range(minimum: float | None, maximum: float | None) -> str | None:
    """Inclusive bounds as people read them: `1..500`, `at least 0`, `at most 2`."""
    if minimum is not None and maximum is not None:
        return f"{_num(minimum)}..{_num(maximum)}"
    if minimum is not None:
        return f"at least {_num(minimum)}"
    if maximum is not None:
        return f"at most {_num(maximum)}"
    return None


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class Command(NamedTuple):
    """One command: its words, parameters, response type and handler."""

    name: str  # words separated by spaces: "index rebuild"
    summary: str
    response_type: str
    handler: str  # "module:function", imported lazily
    params: tuple[Param, ...] = ()
    needs_repo: bool = True
    errors: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    details: str = ""

    def _implied_errors(self) -> tuple[str, ...]:
        # A bounded repeatable can be refused: the code every such command may answer.
        bounded = any(p.max_count is not None for p in self.params)
        if bounded and "ERR_INPUT_TOO_LARGE" not in self.errors:
            return ("ERR_INPUT_TOO_LARGE",)
        return ()

    @property
    def words(self) -> tuple[str, ...]:
        """The command's words, e.g. ("index", "rebuild")."""
        return tuple(self.name.split())

    def describe(self) -> dict[str, Any]:
        """This command as it appears in the manifest."""
        return {
            "name": self.name,
            "summary": self.summary,
            "response_type": self.response_type,
            "needs_repo": self.needs_repo,
            "params": [p.describe() for p in self.params],
            "errors": list(self.errors) + list(self._implied_errors()),
            "examples": list(self.examples),
            **({"details": self.details} if self.details else {}),
        }


# The write doors refuse a memory holding a credential (ERR_SECRET_DETECTED) unless told;
# write, correct and task add share this flag.
ALLOW_SECRET: Final = Param(
    "allow_secret",
    "write it even though it holds what looks like a credential (an API key, a token,"
    " a private key, a password)",
    type="bool",
    default=False,
)

# The embedders a flag can name (memhtml.embed.registry): the built-ins, then any installed
# plugin's, which memhtml.seams finds by entry point. Every embedder flag's help says it.
_PLUGIN_EMBEDDER: Final = "or an installed plugin's name (docs/plugins.md)"
EMBEDDER_NAMES: Final = f"local, fake, bedrock, openai, {_PLUGIN_EMBEDDER}"
EMBEDDER_NAMES_OR_OFF: Final = f"local, fake, bedrock, openai, off, {_PLUGIN_EMBEDDER}"


class RawOutput(NamedTuple):
    """A handler's answer printed as it is, not as an envelope (`hook`: the host's protocol)."""

    text: str
