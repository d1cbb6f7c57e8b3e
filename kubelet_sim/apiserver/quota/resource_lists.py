"""``ResourceList`` (resource name → quantity) and the arithmetic quota does on it, as
k8s.io/apiserver's ``quota/v1`` helpers and ``resource.Quantity`` do it.

Quantities add exactly; a sum keeps the format of its left side unless that side is zero
(then it takes the right side's), as ``Quantity.Add``/``Sub`` do, so ``0 + 1Gi`` prints
``1Gi``. Text is written back in the canonical form (``Quantity.String()``).
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubelet_sim.api.quantity import INT64_MAX, Quantity, QuantityError

ResourceList = dict[str, Quantity]

_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
ZERO = Quantity(Decimal(0), "DecimalSI")
ONE = Quantity(Decimal(1), "DecimalSI")
MAX_MILLI_VALUE = INT64_MAX // 1000  # resource.MaxMilliValue


def count(n: int) -> Quantity:
    """``resource.NewQuantity(n, DecimalSI)``."""
    return Quantity(Decimal(n), "DecimalSI")


def parse_list(raw: Any) -> ResourceList:
    """A stored resource list (``{"cpu": "100m"}``); entries that do not parse are left
    out (validation refused them before they were stored)."""
    out: ResourceList = {}
    for name, text in (raw or {}).items() if isinstance(raw, dict) else ():
        try:
            out[str(name)] = Quantity.parse(text)
        except QuantityError:
            continue
    return out


def to_json(items: Mapping[str, Quantity]) -> dict[str, str]:
    return {name: q.canonical() for name, q in sorted(items.items())}


def plus(a: Quantity, b: Quantity) -> Quantity:
    fmt = b.format if a.amount.is_zero() else a.format
    return Quantity(_EXACT.add(a.amount, b.amount), fmt)


def minus(a: Quantity, b: Quantity) -> Quantity:
    fmt = b.format if a.amount.is_zero() else a.format
    return Quantity(_EXACT.subtract(a.amount, b.amount), fmt)


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """``quota.Add``: every name of either list, summed where both have it."""
    out = dict(a)
    for name, q in b.items():
        out[name] = plus(out[name], q) if name in out else q
    return out


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """``quota.SubtractWithNonNegativeResult``: ``a - b`` per name, never below zero;
    names only in ``b`` are zero."""
    out: ResourceList = {}
    for name, q in a.items():
        left = minus(q, b[name]) if name in b else q
        out[name] = left if left.amount > 0 else Quantity(Decimal(0), "DecimalSI")
    for name in b:
        out.setdefault(name, Quantity(Decimal(0), "DecimalSI"))
    return out


def mask(items: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    """``quota.Mask``: only the entries named."""
    keep = set(names)
    return {n: q for n, q in items.items() if n in keep}


def remove_zeros(items: Mapping[str, Quantity]) -> ResourceList:
    return {n: q for n, q in items.items() if not q.amount.is_zero()}


def negative(items: Mapping[str, Quantity]) -> list[str]:
    return sorted(n for n, q in items.items() if q.amount < 0)


def exceeded(used: Mapping[str, Quantity], hard: Mapping[str, Quantity]) -> list[str]:
    """``quota.LessThanOrEqual``'s second answer: the names ``used`` goes past ``hard``
    on (names ``hard`` lacks never exceed)."""
    return sorted(n for n, q in used.items() if n in hard and q.amount > hard[n].amount)


def equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    """``quota.Equals``: the same names with the same amounts (formats aside)."""
    return a.keys() == b.keys() and all(a[n].amount == b[n].amount for n in a)


def pretty(items: Mapping[str, Quantity]) -> str:
    """The admission plugin's ``prettyPrint``: ``name=value`` sorted by name, joined by
    commas."""
    return ",".join(f"{n}={items[n].canonical()}" for n in sorted(items))


def milli_value(q: Quantity) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up."""
    return int(_EXACT.multiply(q.amount, Decimal(1000)).to_integral_value(
        rounding=decimal.ROUND_CEILING, context=_EXACT))


def comparable(*quantities: Quantity) -> list[int]:
    """The LimitRanger's ``requestLimitEnforcedValues``: the values in thousandths when
    none of them is too big for that, else in whole units."""
    values = [q.value() for q in quantities]
    if all(v <= MAX_MILLI_VALUE for v in values):
        return [milli_value(q) for q in quantities]
    return values
