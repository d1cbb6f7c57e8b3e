"""Kubernetes ``resource.Quantity`` for storage sizes, parsed exactly (no floats).

Grammar (from Kubernetes' quantity.go):
``<sign><digits>[.<digits>]<suffix>`` where the suffix is a binary SI suffix
(``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or a decimal
exponent (``e3``, ``E-2``). ``1.5Gi`` is exactly 1610612736 bytes. Values finer than
``1n`` round up to ``1n``; :meth:`Quantity.value` rounds up to a whole number, as
``Quantity.Value()`` does for byte counts.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SYNTAX = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?"
)
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """The text is not a valid Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """An exact amount plus the format Kubernetes keeps for canonical printing."""

    amount: Fraction
    format: str  # "BinarySI" | "DecimalSI" | "DecimalExponent"

    @classmethod
    def parse(cls, text: Any) -> Quantity:
        """Parse a quantity string (an int is accepted as a plain number)."""
        if isinstance(text, bool):
            raise QuantityError(f"quantities must match the regular expression: {text!r}")
        if isinstance(text, int):
            return cls(Fraction(text), "DecimalSI")
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, not {type(text).__name__}")
        m = _SYNTAX.fullmatch(text.strip())
        if not m or not text.strip():
            raise QuantityError(
                f"quantities must match the regular expression "
                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
            )
        number = Fraction(m.group("num"))
        suffix = m.group("suffix") or ""
        if suffix in _BINARY:
            amount, fmt = number * 1024 ** _BINARY[suffix], "BinarySI"
        elif suffix in _DECIMAL:
            amount, fmt = number * Fraction(10) ** _DECIMAL[suffix], "DecimalSI"
        else:
            amount, fmt = number * Fraction(10) ** int(suffix[1:]), "DecimalExponent"
        # Kubernetes keeps nano precision and rounds finer amounts away from zero.
        scaled = amount / _NANO
        if scaled.denominator != 1:
            rounded = math.ceil(abs(scaled)) * (1 if amount >= 0 else -1)
            amount = rounded * _NANO
        return cls(amount, fmt)

    def value(self) -> int:
        """Whole units rounded up (``Quantity.Value()``): the byte count for storage."""
        return math.ceil(self.amount)

    def __str__(self) -> str:
        return self.canonical()

    def canonical(self) -> str:
        """The canonical spelling the API server writes back (``1.5Gi`` → ``1536Mi``)."""
        amount = self.amount
        if amount == 0:
            return "0"
        if self.format == "BinarySI" and amount.denominator == 1 and abs(amount) >= 1024:
            n, power = int(amount), 0
            while power < 6 and n % 1024 == 0:
                n //= 1024
                power += 1
            binary = next((k for k, v in _BINARY.items() if v == power), "")
            return f"{n}{binary}"
        # Decimal: smallest exponent multiple of 3 (>= -9) that leaves an integer mantissa,
        # then move up while the mantissa stays integral.
        exp = -9
        mantissa = amount * Fraction(10) ** 9
        while exp < 18 and mantissa.numerator % 1000 == 0 and mantissa.denominator == 1:
            mantissa /= 1000
            exp += 3
        if self.format == "DecimalExponent":
            return f"{int(mantissa)}" + (f"e{exp}" if exp else "")
        decimal = next(k for k, v in _DECIMAL.items() if v == exp)
        return f"{int(mantissa)}{decimal}"


def parse_storage(text: Any) -> int:
    """A storage size in bytes; negative sizes are rejected."""
    if isinstance(text, str | int):
        return _parse_storage(text)  # controllers read the same few sizes every pass
    return _parse_storage_uncached(text)


@functools.lru_cache(maxsize=4096, typed=True)
def _parse_storage(text: str | int) -> int:
    return _parse_storage_uncached(text)


def _parse_storage_uncached(text: Any) -> int:
    qty = Quantity.parse(text)
    if qty.amount < 0:
        raise QuantityError(f"storage size must not be negative: {text!r}")
    return qty.value()


def format_storage(size: int) -> str:
    """A byte count as Kubernetes prints ``resource.NewQuantity(size, BinarySI)``
    (10737418240 → ``10Gi``, 1500000000 → ``1500000000``): what a provisioner writes
    into a PV's capacity from the CSI answer."""
    if size < 0:
        raise QuantityError(f"storage size must not be negative: {size}")
    return Quantity(Fraction(size), "BinarySI").canonical()


def bytes_quantity(size: int) -> str:
    """A byte count as the API server writes it (``resource.NewQuantity(n, BinarySI)``)."""
    return Quantity(Fraction(size), "BinarySI").canonical()
