"""Network config loading: libcni's parsing and containerd's choice of the pod network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubelet_sim.runtime.libcni.conf import (
    LOOPBACK_NETWORK,
    InvalidNetworkConfig,
    NoNetworkConfig,
    conf_list_from_bytes,
    load_pod_network,
)


def write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def conflist(name: str, version: str = "1.0.0", plugin: str = "bridge") -> dict:
    return {"cniVersion": version, "name": name, "plugins": [{"type": plugin}]}


def test_a_missing_conf_dir_means_no_network_config(tmp_path):
    with pytest.raises(
        NoNetworkConfig, match=r"no network config found in .*cni plugin not initialized"
    ):
        load_pod_network(str(tmp_path / "absent"))


def test_a_conf_dir_without_config_files_means_no_network_config(tmp_path):
    (tmp_path / "README").write_text("not a config")
    (tmp_path / "sub.conflist").mkdir()
    with pytest.raises(NoNetworkConfig):
        load_pod_network(str(tmp_path))


def test_the_first_file_by_name_is_the_pod_network(tmp_path):
    write(tmp_path / "20-second.conflist", conflist("second"))
    write(tmp_path / "10-first.conflist", conflist("first"))
    write(tmp_path / "05-zero.json", {"cniVersion": "0.4.0", "name": "zero", "type": "ptp"})
    net = load_pod_network(str(tmp_path))
    assert (net.name, net.source) == ("zero", str(tmp_path / "05-zero.json"))


def test_a_single_plugin_conf_is_wrapped_into_a_one_plugin_list(tmp_path):
    write(tmp_path / "10-net.conf", {"cniVersion": "0.3.1", "name": "single", "type": "bridge"})
    net = load_pod_network(str(tmp_path))
    assert (net.name, net.cni_version, [p.type for p in net.plugins]) == (
        "single",
        "0.3.1",
        ["bridge"],
    )
    assert json.loads(net.bytes)["plugins"][0]["type"] == "bridge"


def test_a_broken_first_file_makes_the_network_not_ready_as_containerd_does(tmp_path):
    write(tmp_path / "10-broken.conflist", "{not json")
    write(tmp_path / "20-good.conflist", conflist("good"))
    with pytest.raises(InvalidNetworkConfig, match="failed to load CNI config list file"):
        load_pod_network(str(tmp_path))


def test_skip_invalid_picks_the_first_valid_file_as_ocicni_does(tmp_path):
    write(tmp_path / "10-broken.conflist", "{not json")
    write(tmp_path / "15-notype.conf", {"cniVersion": "1.0.0", "name": "x"})
    write(tmp_path / "20-good.conflist", conflist("good"))
    assert load_pod_network(str(tmp_path), skip_invalid=True).name == "good"


def test_a_conf_file_holding_a_list_is_rejected_for_its_missing_type(tmp_path):
    write(tmp_path / "10-wrong.conf", conflist("wrong"))
    with pytest.raises(InvalidNetworkConfig, match="missing 'type'"):
        load_pod_network(str(tmp_path))


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"cniVersion": "1.0.0", "plugins": [{"type": "a"}]}, "no name"),
        ({"name": "n", "plugins": []}, "no plugins in list"),
        ({"name": "n", "plugins": {"type": "a"}}, "invalid 'plugins' type"),
        ({"name": "n", "plugins": [{"bridge": "x"}]}, "failed to parse plugin config 0"),
        ({"name": "n", "disableCheck": "maybe", "plugins": [{"type": "a"}]}, "disableCheck"),
    ],
)
def test_malformed_lists_are_rejected(doc, message):
    with pytest.raises(InvalidNetworkConfig, match=message):
        conf_list_from_bytes(json.dumps(doc).encode())


def test_cni_versions_picks_the_highest_version_libcni_implements():
    doc: dict[str, object] = {"cniVersions": ["0.4.0", "1.1.0", "9.0.0"], "cniVersion": "1.0.0"}
    doc |= {"name": "n", "plugins": [{"type": "a"}]}
    assert conf_list_from_bytes(json.dumps(doc).encode()).cni_version == "1.1.0"


def test_disable_flags_accept_booleans_and_strings():
    doc = {"name": "n", "disableCheck": True, "disableGC": "TRUE", "plugins": [{"type": "a"}]}
    net = conf_list_from_bytes(json.dumps(doc).encode())
    assert (net.disable_check, net.disable_gc) == (True, True)


def test_plugin_capabilities_are_read_from_the_plugin_config():
    doc = conflist("n")
    doc["plugins"].append({"type": "portmap", "capabilities": {"portMappings": True}})
    net = conf_list_from_bytes(json.dumps(doc).encode())
    assert [p.capabilities for p in net.plugins] == [{}, {"portMappings": True}]


def test_the_loopback_network_is_the_one_containerd_adds():
    assert (LOOPBACK_NETWORK.name, LOOPBACK_NETWORK.cni_version) == ("cni-loopback", "1.0.0")
    assert [p.type for p in LOOPBACK_NETWORK.plugins] == ["loopback"]


def test_a_list_without_plugins_takes_the_conf_files_of_its_network_dir(tmp_path):
    write(tmp_path / "10-net.conflist", {"cniVersion": "1.0.0", "name": "split"})
    (tmp_path / "split").mkdir()
    write(tmp_path / "split" / "20-portmap.conf", {"type": "portmap"})
    write(tmp_path / "split" / "10-bridge.conf", {"type": "bridge"})
    write(tmp_path / "split" / "30-ignored.json", {"type": "tuning"})
    net = load_pod_network(str(tmp_path))
    assert [p.type for p in net.plugins] == ["bridge", "portmap"]


def test_inlined_plugins_come_first_and_the_flag_turns_the_network_dir_off(tmp_path):
    (tmp_path / "mixed").mkdir()
    write(tmp_path / "mixed" / "10-portmap.conf", {"type": "portmap"})
    write(tmp_path / "10-net.conflist", conflist("mixed"))
    assert [p.type for p in load_pod_network(str(tmp_path)).plugins] == ["bridge", "portmap"]
    write(tmp_path / "10-net.conflist", {**conflist("mixed"), "loadOnlyInlinedPlugins": True})
    assert [p.type for p in load_pod_network(str(tmp_path)).plugins] == ["bridge"]


def test_a_list_with_no_plugin_anywhere_is_invalid(tmp_path):
    write(tmp_path / "10-net.conflist", {"cniVersion": "1.0.0", "name": "empty"})
    with pytest.raises(InvalidNetworkConfig, match="no plugin configs found"):
        load_pod_network(str(tmp_path))
