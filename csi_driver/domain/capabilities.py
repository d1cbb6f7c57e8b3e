"""Capabilities computed once from the config; ``require`` gates RPCs with them."""

from __future__ import annotations

from dataclasses import dataclass

from csi_driver.config import Config
from csi_driver.errors import Unimplemented


@dataclass(frozen=True)
class Capabilities:
    plugin_services: frozenset[str]
    volume_expansion: str  # "", "ONLINE" or "OFFLINE"
    controller: frozenset[str]
    node: frozenset[str]
    group_controller: frozenset[str]

    def require_controller(self, name: str) -> None:
        _require(name, self.controller, "controller capability")

    def require_node(self, name: str) -> None:
        _require(name, self.node, "node capability")

    def require_group(self, name: str) -> None:
        _require(name, self.group_controller, "group controller capability")

    def require_service(self, name: str) -> None:
        if name not in self.plugin_services:
            raise Unimplemented(f"{name} is not offered by this plugin")


def _require(name: str, offered: frozenset[str], what: str) -> None:
    if name not in offered:
        raise Unimplemented(f"{what} {name} is not offered")


def _offered(*entries: tuple[bool, str]) -> set[str]:
    return {name for on, name in entries if on}


def compute(cfg: Config) -> Capabilities:
    """The one place that decides what this process advertises (and therefore serves).

    Plugin capabilities describe the plugin "as a whole", every instance of one
    version alike whichever RPCs it serves (spec, GetPluginCapabilities): a
    ``--mode node`` process reports CONTROLLER_SERVICE too, because its plugin has
    a controller (its own ``--mode controller`` process).  Service capabilities
    (ControllerGetCapabilities, NodeGetCapabilities) belong to the process."""
    services = {"CONTROLLER_SERVICE"} | _offered(
        (cfg.group_snapshots, "GROUP_CONTROLLER_SERVICE"),
        (cfg.snapshot_metadata, "SNAPSHOT_METADATA_SERVICE"),
        (cfg.topology, "VOLUME_ACCESSIBILITY_CONSTRAINTS"),
    )
    controller: set[str] = set()
    group: set[str] = set()
    if cfg.serves_controller:
        controller = _offered(
            (True, "CREATE_DELETE_VOLUME"), (True, "LIST_VOLUMES"), (True, "GET_CAPACITY"),
            (True, "CLONE_VOLUME"), (True, "GET_VOLUME"), (True, "LIST_VOLUMES_PUBLISHED_NODES"),
            (cfg.attach_required, "PUBLISH_UNPUBLISH_VOLUME"),
            (cfg.attach_required, "PUBLISH_READONLY"),
            (cfg.snapshots, "CREATE_DELETE_SNAPSHOT"), (cfg.snapshots, "LIST_SNAPSHOTS"),
            (cfg.snapshots, "GET_SNAPSHOT"),
            (cfg.expansion != "none", "EXPAND_VOLUME"),
            (cfg.volume_condition, "VOLUME_CONDITION"),
            (cfg.single_node_multi_writer, "SINGLE_NODE_MULTI_WRITER"),
            (cfg.modify_volume, "MODIFY_VOLUME"),
        )
        group = _offered((cfg.group_snapshots, "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"))
    node: set[str] = set()
    if cfg.serves_node:
        node = _offered(
            (True, "STAGE_UNSTAGE_VOLUME"), (True, "GET_VOLUME_STATS"),
            (cfg.node_expansion, "EXPAND_VOLUME"),
            (cfg.volume_condition, "VOLUME_CONDITION"),
            (cfg.single_node_multi_writer, "SINGLE_NODE_MULTI_WRITER"),
            (cfg.volume_mount_group, "VOLUME_MOUNT_GROUP"),
        )
    expansion = {"online": "ONLINE", "offline": "OFFLINE"}.get(cfg.expansion, "")
    return Capabilities(
        plugin_services=frozenset(services),
        volume_expansion=expansion,
        controller=frozenset(controller),
        node=frozenset(node),
        group_controller=frozenset(group),
    )
