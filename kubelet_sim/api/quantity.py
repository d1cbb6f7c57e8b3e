"""Kubernetes ``resource.Quantity``, parsed exactly and kept as digits and a scale.

Grammar (from Kubernetes' quantity.go):
``<sign><digits>[.<digits>]<suffix>`` where the suffix is a binary SI suffix
(``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or a decimal
exponent (``e3``, ``E-2``). ``1.5Gi`` is exactly 1610612736 bytes.

As in Kubernetes the amount is an unscaled integer and a power of ten (``inf.Dec``), never
the expanded value: ``1e10000000`` is the digit 1 and the exponent 10000000, so it costs
what its text costs, and ``"1" * 5000`` is 5000 digits, not an integer conversion Python
refuses. The rules are Kubernetes': the exponent of an ``e`` suffix is read as int64 and
kept as int32; amounts finer than ``1n`` round away from zero to ``1n``; a BinarySI
amount is capped at 2^63-1; :meth:`Quantity.value` rounds up to a whole number and
saturates at the int64 bounds, as a byte count must fit CSI's int64 fields.
"""

from __future__ import annotations

import decimal
import functools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SYNTAX = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?"
)
_REGEX_TEXT = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
_NANO = Decimal("1e-9")
_INT64_MAX = Decimal(INT64_MAX)
# Exact arithmetic at any size: no rounding, no overflow (the exponents Kubernetes allows
# are int32, far inside these bounds).
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                         traps=[decimal.InvalidOperation])


class QuantityError(ValueError):
    """The text is not a valid Kubernetes quantity."""


def _int32(value: int) -> int:
    """``int32(value)`` as Go converts: the low 32 bits, signed."""
    return (value + 2**31) % 2**32 - 2**31


def _syntax_error(text: Any) -> QuantityError:
    return QuantityError(f"quantities must match the regular expression {_REGEX_TEXT}: {text!r}")


@dataclass(frozen=True)
class Quantity:
    """An exact amount (a :class:`~decimal.Decimal`: digits and an exponent) plus the
    format Kubernetes keeps for canonical printing."""

    amount: Decimal
    format: str  # "BinarySI" | "DecimalSI" | "DecimalExponent"

    @classmethod
    def parse(cls, text: Any) -> Quantity:
        """Parse a quantity string (an int is accepted as a plain number)."""
        if isinstance(text, bool):
            raise _syntax_error(text)
        if isinstance(text, int):
            return cls(Decimal(text), "DecimalSI")
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, not {type(text).__name__}")
        m = _SYNTAX.fullmatch(text.strip())
        if not m or not text.strip():
            raise _syntax_error(text)
        number = Decimal(m.group("num"))
        suffix = m.group("suffix") or ""
        if suffix in _BINARY:
            amount, fmt = _EXACT.multiply(number, Decimal(1024 ** _BINARY[suffix])), "BinarySI"
        elif suffix in _DECIMAL:
            amount, fmt = _EXACT.scaleb(number, _DECIMAL[suffix]), "DecimalSI"
        else:
            exponent = int(suffix[1:])
            if not INT64_MIN <= exponent <= INT64_MAX:
                raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
            amount, fmt = _EXACT.scaleb(number, _int32(exponent)), "DecimalExponent"
        places = amount.as_tuple().exponent
        if isinstance(places, int) and places < -9 and not amount.is_zero():
            # Kubernetes keeps nano precision and rounds finer amounts away from zero.
            amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_EXACT)
        if fmt == "BinarySI":
            if abs(amount) > _INT64_MAX:
                amount = _INT64_MAX.copy_sign(amount) if amount > 0 else amount
            if 0 < abs(amount) < 1:
                fmt = "DecimalSI"
        return cls(amount, fmt)

    def value(self) -> int:
        """Whole units rounded up (``Quantity.Value()``): the byte count for storage,
        saturated at the int64 bounds."""
        if self.amount.is_zero():
            return 0
        if self.amount.adjusted() >= 19:
            return INT64_MAX if self.amount > 0 else INT64_MIN
        whole = int(self.amount.to_integral_value(rounding=decimal.ROUND_CEILING,
                                                  context=_EXACT))
        return max(INT64_MIN, min(INT64_MAX, whole))

    def __str__(self) -> str:
        return self.canonical()

    def canonical(self) -> str:
        """The canonical spelling the API server writes back (``1.5Gi`` → ``1536Mi``)."""
        amount = self.amount
        if amount.is_zero():
            return "0"
        fmt = self.format
        if fmt == "BinarySI":
            if abs(amount) < 1024 or amount != amount.to_integral_value(context=_EXACT):
                fmt = "DecimalSI"
            else:
                return _binary(int(amount))
        sign, digits, exponent = amount.as_tuple()
        assert isinstance(exponent, int)
        text = "".join(map(str, digits)).rstrip("0") or "0"
        exponent += len(digits) - len(text)  # trailing zeros move into the exponent
        while exponent % 3:
            text += "0"
            exponent -= 1
        number = ("-" if sign else "") + text
        if fmt == "DecimalSI":
            suffix = next((k for k, v in _DECIMAL.items() if v == exponent), None)
            if suffix is not None:
                return number + suffix
        return number + (f"e{exponent}" if exponent else "")


def _binary(n: int) -> str:
    power = 0
    while power < 6 and n % 1024 == 0:
        n //= 1024
        power += 1
    return f"{n}" + next((k for k, v in _BINARY.items() if v == power), "")


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
    return Quantity(Decimal(size), "BinarySI").canonical()


def bytes_quantity(size: int) -> str:
    """A byte count as the API server writes it (``resource.NewQuantity(n, BinarySI)``)."""
    return Quantity(Decimal(size), "BinarySI").canonical()
