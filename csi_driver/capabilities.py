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
        if name not in self.controller:
            raise Unimplemented(f"controller capability {name} is not offered")

    def require_node(self, name: str) -> None:
        if name not in self.node:
            raise Unimplemented(f"node capability {name} is not offered")

    def require_group(self, name: str) -> None:
        if name not in self.group_controller:
            raise Unimplemented(f"group controller capability {name} is not offered")

    def require_service(self, name: str) -> None:
        if name not in self.plugin_services:
            raise Unimplemented(f"{name} is not offered by this plugin")


def compute(cfg: Config) -> Capabilities:
    """The one place that decides what this process advertises (and therefore serves)."""
    services: set[str] = set()
    controller: set[str] = set()
    group: set[str] = set()
    if cfg.serves_controller:
        services.add("CONTROLLER_SERVICE")
        controller |= {
            "CREATE_DELETE_VOLUME", "LIST_VOLUMES", "GET_CAPACITY", "CLONE_VOLUME",
            "GET_VOLUME", "LIST_VOLUMES_PUBLISHED_NODES",
        }
        if cfg.attach_required:
            controller |= {"PUBLISH_UNPUBLISH_VOLUME", "PUBLISH_READONLY"}
        if cfg.snapshots:
            controller |= {"CREATE_DELETE_SNAPSHOT", "LIST_SNAPSHOTS", "GET_SNAPSHOT"}
        if cfg.expansion != "none":
            controller.add("EXPAND_VOLUME")
        if cfg.volume_condition:
            controller.add("VOLUME_CONDITION")
        if cfg.single_node_multi_writer:
            controller.add("SINGLE_NODE_MULTI_WRITER")
        if cfg.modify_volume:
            controller.add("MODIFY_VOLUME")
        if cfg.group_snapshots:
            services.add("GROUP_CONTROLLER_SERVICE")
            group.add("CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT")
        if cfg.snapshot_metadata:
            services.add("SNAPSHOT_METADATA_SERVICE")
    if cfg.topology:
        services.add("VOLUME_ACCESSIBILITY_CONSTRAINTS")
    node: set[str] = set()
    if cfg.serves_node:
        node |= {"STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"}
        if cfg.node_expansion:
            node.add("EXPAND_VOLUME")
        if cfg.volume_condition:
            node.add("VOLUME_CONDITION")
        if cfg.single_node_multi_writer:
            node.add("SINGLE_NODE_MULTI_WRITER")
    expansion = {"online": "ONLINE", "offline": "OFFLINE"}.get(cfg.expansion, "")
    return Capabilities(
        plugin_services=frozenset(services),
        volume_expansion=expansion,
        controller=frozenset(controller),
        node=frozenset(node),
        group_controller=frozenset(group),
    )
