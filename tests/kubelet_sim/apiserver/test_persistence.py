"""The API server on a database (the etcd role): a server opened again on the same file
has every object with its uid, resourceVersion and finalizers, no deleted one, the
counter where it stopped, and only watch points from after the restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_sim.api.errors import Gone
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.testing.fake_clock import FakeClock


def pod(name: str) -> Resource:
    return new("Pod", name, "default", spec={"containers": [{"name": "c", "image": "busybox"}]})


def reopened(path: Path) -> APIServer:
    return APIServer(database=ObjectDatabase(path))


def test_objects_come_back_as_they_were_and_deleted_ones_do_not(tmp_path: Path) -> None:
    db = tmp_path / "objects.db"
    api = reopened(db)
    kept = api.create(pod("kept"))
    kept.labels["tier"] = "web"
    kept = api.update(kept)
    api.create(pod("gone"))
    api.delete("Pod", "gone", "default")
    claim = api.create(new("PersistentVolumeClaim", "data", "default", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}))
    version = api.resource_version

    again = reopened(db)
    assert [p.name for p in again.list("Pod").items] == ["kept"]
    back = again.get("Pod", "kept", "default")
    assert back.to_dict() == kept.to_dict()
    assert again.get("PersistentVolumeClaim", "data", "default").metadata.uid == \
        claim.metadata.uid
    assert again.resource_version == version
    assert [n.name for n in again.list("Namespace").items] == ["default", "kube-system"]

    later = again.create(pod("later"))
    assert int(later.metadata.resource_version) == int(version) + 1


def test_a_watch_from_before_the_restart_is_gone_one_from_now_is_served(
    tmp_path: Path,
) -> None:
    db = tmp_path / "objects.db"
    api = reopened(db)
    api.create(pod("a"))
    old = api.resource_version
    api.create(pod("b"))
    again = reopened(db)
    with pytest.raises(Gone):
        again.events_since(old)
    mark = again.resource_version
    again.create(pod("c"))
    assert [e.object.name for e in again.events_since(mark)] == ["c"]


def test_a_write_is_on_disk_when_it_returns(tmp_path: Path) -> None:
    """No close, no flush: a second connection (as after kill -9) already sees it."""
    db = tmp_path / "objects.db"
    api = reopened(db)
    api.create(pod("a"))
    version, objects = ObjectDatabase(db).load()
    assert version == int(api.resource_version)
    assert [o.name for o in objects if o.kind == "Pod"] == ["a"]


def test_an_event_kept_on_disk_still_expires_an_hour_after_its_last_write(
    tmp_path: Path,
) -> None:
    db = tmp_path / "objects.db"
    before = FakeClock()
    api = APIServer(clock=before, database=ObjectDatabase(db))
    api.create(pod("web"))
    EventRecorder(api).record("Pod", "default", "web", "Normal", "Pulled", "present", "kubelet")
    after = FakeClock()  # the same start: the restart happens at once
    again = APIServer(clock=after, database=ObjectDatabase(db))
    after.advance(3000)
    assert len(again.list("Event").items) == 1
    after.advance(601)
    assert again.list("Event").items == []
    assert not [o for o in ObjectDatabase(db).load()[1] if o.kind == "Event"]  # and on disk
