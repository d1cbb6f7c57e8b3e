"""host-local's handlers run in-process through the skel (swapped env, stdin, stdout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.host_local import ABOUT, HANDLERS, KNOWN_ARGS
from tests.cni_plugin.skelharness import Outcome, base_env, run_in_process
from tests.cni_plugin.test_host_local_exec import ALL_VERSIONS, addresses_of, leases_in, net_conf


def run(command: str, conf: dict[str, Any], **env: str) -> Outcome:
    return run_in_process(HANDLERS, base_env(command, **env), json.dumps(conf), about=ABOUT,
                          known_args=KNOWN_ARGS)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_then_del_in_process_in_every_version(tmp_path: Path, version: str) -> None:
    conf = net_conf(tmp_path, version, ranges=[[{"subnet": "10.9.0.0/16"}],
                                               [{"subnet": "fd09::/64"}]])
    added = run("ADD", conf)
    assert added.status == 0, added.stdout
    assert addresses_of(added.json()) == ["10.9.0.2/16", "fd09::2/64"]
    assert leases_in(tmp_path) == {"10.9.0.2": b"ctr1\r\neth0", "fd09::2": b"ctr1\r\neth0"}
    deleted = run("DEL", conf)
    assert (deleted.status, deleted.stdout) == (0, "")
    assert leases_in(tmp_path) == {}


def test_duplicate_add_in_process_is_refused_with_code_999(tmp_path: Path) -> None:
    conf = net_conf(tmp_path)
    run("ADD", conf)
    again = run("ADD", conf)
    assert again.status == 1
    assert again.json()["code"] == 999
    assert again.json()["msg"].endswith("duplicate allocation is not allowed")


def test_gc_in_process_keeps_valid_attachments(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, "1.1.0")
    run("ADD", conf, CNI_CONTAINERID="keep")
    run("ADD", conf, CNI_CONTAINERID="drop")
    conf["cni.dev/valid-attachments"] = [{"containerID": "keep", "ifname": "eth0"}]
    assert run("GC", conf).status == 0
    assert leases_in(tmp_path) == {"10.1.2.2": b"keep\r\neth0"}


def test_status_in_process_reports_a_full_range_as_not_available(tmp_path: Path) -> None:
    conf = net_conf(tmp_path, "1.1.0", ranges=[[{"subnet": "10.1.2.0/30"}]])
    run("ADD", conf)
    status = run("STATUS", conf)
    assert status.status == 1
    assert status.json() == {"cniVersion": "1.1.0", "code": 50,
                             "msg": "no IP addresses available in range set: 10.1.2.1-10.1.2.2",
                             "details": "range set 0 is full"}
