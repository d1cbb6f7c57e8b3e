"""Quantities parsed exactly as Kubernetes' resource.Quantity."""

from __future__ import annotations

import pytest

from kubelet_sim.api.quantity import Quantity, QuantityError, format_storage, parse_storage


@pytest.mark.parametrize(("text", "size"), [
    ("10Gi", 10 * 1024**3),
    ("1.5Gi", 1610612736),
    ("500M", 500_000_000),
    ("1Ki", 1024),
    ("1k", 1000),
    ("2Ti", 2 * 1024**4),
    ("1E", 10**18),
    ("1Ei", 1024**6),
    ("1e3", 1000),
    ("1E3", 1000),
    ("12e-1", 2),          # 1.2 rounds up to whole bytes
    ("100m", 1),
    ("0.5", 1),
    ("+5", 5),
    (".5Ki", 512),
    ("0", 0),
    (1073741824, 1073741824),
])
def test_storage_sizes_parse_exactly(text: object, size: int) -> None:
    assert parse_storage(text) == size


@pytest.mark.parametrize("text", ["", "Gi", "10 Gi", "10K", "10gi", "1.2.3", "10Gb", "e3",
                                  "--1", "1ee3", None, 1.5, True])
def test_malformed_quantities_are_rejected(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_storage(text)


def test_negative_storage_is_rejected() -> None:
    with pytest.raises(QuantityError):
        parse_storage("-1Gi")


@pytest.mark.parametrize(("text", "canonical"), [
    ("1.5Gi", "1536Mi"),
    ("10Gi", "10Gi"),
    ("1024Mi", "1Gi"),
    ("500M", "500M"),
    ("1.5G", "1500M"),
    ("0.5Ki", "512"),
    ("100m", "100m"),
    ("1000", "1k"),
    ("0", "0"),
])
def test_canonical_form_matches_kubernetes(text: str, canonical: str) -> None:
    assert Quantity.parse(text).canonical() == canonical


def test_sub_nano_amounts_round_up_to_one_nano() -> None:
    assert Quantity.parse("0.1n").canonical() == "1n"


@pytest.mark.parametrize(("size", "text"), [
    (10 * 1024**3, "10Gi"),
    (1610612736, "1536Mi"),
    (1_500_000_000, "1500000000"),
    (1023, "1023"),
    (0, "0"),
])
def test_byte_counts_format_as_binary_si(size: int, text: str) -> None:
    assert format_storage(size) == text
    assert parse_storage(text) == size


@pytest.mark.parametrize(("text", "canonical"), [
    ("1e10000000", "10e9999999"),     # one digit and an exponent, never expanded
    ("1e5000", "100e4998"),
    ("1" * 5000, "1" * 5000),         # more digits than Python converts to an int
    ("1e9999999999", "10e1410065406"),  # the exponent kept as int32, as Go converts it
    ("8Ei", "9223372036854775807"),   # BinarySI is capped at 2^63-1
    ("1e-20", "1e-9"),
    ("-1.5Gi", "-1536Mi"),
    ("12e18", "12e18"),
])
def test_huge_and_tiny_quantities_keep_digits_and_scale(text: str, canonical: str) -> None:
    assert Quantity.parse(text).canonical() == canonical


@pytest.mark.parametrize("text", ["1e10000000", "1e100000000", "1" * 5000, "10E", "8Ei"])
def test_storage_sizes_beyond_int64_saturate_instead_of_expanding(text: str) -> None:
    assert parse_storage(text) == 2**63 - 1


def test_an_exponent_beyond_int64_is_a_suffix_error() -> None:
    with pytest.raises(QuantityError):
        parse_storage("1e99999999999999999999")
