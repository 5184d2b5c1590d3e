"""Option types shared by the commands."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["FiniteRange"]


class FiniteRange(click.FloatRange):
    """``click.FloatRange`` that refuses NaN: every comparison with NaN is false, so a range lets it through."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number
