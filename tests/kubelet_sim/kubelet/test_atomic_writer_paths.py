"""The atomic writer never writes outside its volume directory: the kubelet's rules for a
payload path refuse absolute paths and any ``..``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubelet_sim.kubelet.atomic_writer import FileProjection, validate_payload_path, write_payload


@pytest.mark.parametrize(("path", "said"), [
    ("/etc/passwd", "must be relative path"),
    ("../escape", "must not contain '..'"),
    ("a/../../escape", "must not contain '..'"),
    ("..hidden", "must not start with '..'"),
    ("", "must not be empty"),
])
def test_a_payload_path_leaving_the_volume_is_refused(path: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        validate_payload_path(path)


def test_a_payload_with_an_escaping_path_writes_nothing(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    with pytest.raises(ValueError):
        write_payload(volume, {"ok": FileProjection(b"1", 0o644),
                               "../outside": FileProjection(b"2", 0o644)},
                      datetime(2026, 1, 1, tzinfo=UTC))
    assert not (tmp_path / "outside").exists()
    assert list(volume.iterdir()) == []
