"""The JSON forms of Kubernetes' specially encoded types (Time, MicroTime, Duration,
Quantity), as Go's apimachinery writes and reads them."""

from __future__ import annotations

import calendar

import pytest

from kubelet_sim.apiserver.http.encoding import special


def test_time_is_rfc3339_in_utc_with_whole_seconds() -> None:
    seconds = calendar.timegm((2024, 5, 1, 10, 0, 7, 0, 0, 0))
    assert special.format_time(seconds) == "2024-05-01T10:00:07Z"
    assert special.parse_time("2024-05-01T10:00:07Z") == (seconds, 0)


def test_micro_time_keeps_six_fractional_digits() -> None:
    seconds, nanos = special.parse_time("2024-05-01T10:00:07.123456Z")
    assert nanos == 123_456_000
    assert special.format_micro_time(seconds, nanos) == "2024-05-01T10:00:07.123456Z"
    assert special.format_micro_time(seconds, 0) == "2024-05-01T10:00:07.000000Z"


def test_an_offset_is_read_as_the_same_instant_in_utc() -> None:
    assert special.parse_time("2024-05-01T12:00:07+02:00") == \
        special.parse_time("2024-05-01T10:00:07Z")


def test_text_that_is_not_rfc3339_is_refused() -> None:
    with pytest.raises(ValueError):
        special.parse_time("yesterday")


@pytest.mark.parametrize(("nanos", "text"), [
    (0, "0s"), (100, "100ns"), (2_000, "2\u00b5s"), (1_500, "1.5\u00b5s"),
    (300_000_000, "300ms"), (1_500_000_000, "1.5s"), (3_723_000_000_000, "1h2m3s"),
    (3_600_000_000_000, "1h0m0s"), (-90_000_000_000, "-1m30s"),
])
def test_a_duration_is_written_as_go_prints_it_and_read_back(nanos: int, text: str) -> None:
    assert special.format_duration(nanos) == text
    assert special.parse_duration(text) == nanos


@pytest.mark.parametrize(("text", "nanos"), [
    ("1.5h", 5_400_000_000_000), ("90m", 5_400_000_000_000), ("+5s", 5_000_000_000),
    ("1us", 1_000), ("1h30m", 5_400_000_000_000), ("0", 0),
])
def test_go_duration_forms_are_read(text: str, nanos: int) -> None:
    assert special.parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "5", "1x", "h", "1h-2m"])
def test_text_that_is_no_go_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        special.parse_duration(text)


def test_a_quantity_sent_as_a_json_number_is_its_text() -> None:
    assert special.quantity_text("100m") == "100m"
    assert special.quantity_text(2) == "2"
    assert special.quantity_text(1.0) == "1"
    assert special.quantity_text(0.5) == "0.5"
    with pytest.raises(ValueError):
        special.quantity_text(True)
