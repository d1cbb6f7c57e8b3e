"""Differential: VERSION of each of our plugins beside the reference of the same type,
with a config of every cniVersion on stdin (VERSION ignores it: it always answers)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.netns import REFERENCE_DIR, needs_reference

from .procharness import exec_plugin
from .reference_versions import ALL_VERSIONS

pytestmark = [needs_reference, pytest.mark.reference]
PAIRS = [("loopback", "emu-loopback"), ("bridge", "emu-bridge"),
         ("host-local", "emu-host-local")]


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize(("reference", "ours"), PAIRS)
def test_version_answers_as_the_reference_with_every_version_it_knows(
        reference: str, ours: str, version: str, cni_bin: str) -> None:
    conf = {"cniVersion": version, "name": "net", "type": reference}
    theirs = exec_plugin(f"{REFERENCE_DIR}/{reference}", {"CNI_COMMAND": "VERSION"}, conf)
    mine = exec_plugin(f"{cni_bin}/{ours}", {"CNI_COMMAND": "VERSION"}, conf)
    assert (mine.status, theirs.status) == (0, 0)
    known = json.loads(theirs.stdout)["supportedVersions"]
    answer = json.loads(mine.stdout)
    assert answer["supportedVersions"][:len(known)] == known  # and 1.1.0 where it stops
    assert answer == {"cniVersion": "1.1.0", "supportedVersions": list(ALL_VERSIONS)}
