"""The shape of a command-table entry (data only, no parsing machinery)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ParamType = Literal["str", "int", "float", "bool"]


@dataclass(frozen=True)
class Param:
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
        return out


@dataclass(frozen=True)
class Command:
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
    extra: dict[str, Any] = field(default_factory=dict)

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
            "errors": list(self.errors),
            "examples": list(self.examples),
            **({"details": self.details} if self.details else {}),
        }
