"""Errors a user can act on.

Every error the CLI prints is a :class:`ClawcoreError`: its message is one line
that says what was wrong, with which input, and what to do. The CLI prints it
without a traceback and exits with :attr:`ClawcoreError.exit_code`.
"""

from __future__ import annotations

__all__ = ["ClawcoreError", "ConfigError", "MemoryAccessError", "PathDenied", "PluginError"]


class ClawcoreError(Exception):
    """Base of every user-facing error."""

    exit_code = 1


class ConfigError(ClawcoreError):
    """The configuration is invalid; ``problems`` holds one line per problem."""

    exit_code = 2

    def __init__(self, problems: list[str] | str, *, path: str = "") -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(where + "; ".join(self.problems))


class PluginError(ClawcoreError):
    """A plugin is missing, blocked or broken where it is required."""

    exit_code = 3


class MemoryAccessError(ClawcoreError):
    """A memory operation failed for a reason the user can fix (bad path, range)."""


class PathDenied(ClawcoreError):
    """A path falls outside what the filesystem policy allows."""
