"""Many emu-host-local processes on one network at once never share an address."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cni_plugin.test_host_local_exec import (
    PLUGIN,
    addresses_of,
    leases_in,
    net_conf,
    run_plugin,
    start_plugin,
)


def finish(proc: subprocess.Popen[bytes]) -> bytes:
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    proc.wait(timeout=120)
    return out


def test_fifty_concurrent_adds_on_one_network_get_fifty_distinct_addresses(
        tmp_path: Path) -> None:
    conf = net_conf(tmp_path, ranges=[[{"subnet": "10.1.2.0/24"}], [{"subnet": "fd00:3::/64"}]])
    procs = [start_plugin(PLUGIN, "ADD", conf, container_id=f"c{i}") for i in range(50)]
    results = []
    for proc in procs:
        out = finish(proc)
        assert proc.returncode == 0, out
        results.append(json.loads(out))
    v4 = [addresses_of(r)[0] for r in results]
    v6 = [addresses_of(r)[1] for r in results]
    assert len(set(v4)) == 50 and len(set(v6)) == 50
    leases = leases_in(tmp_path)
    assert len(leases) == 100
    owners = set(leases.values())
    assert owners == {f"c{i}\r\neth0".encode() for i in range(50)}


def test_concurrent_adds_and_dels_leave_exactly_the_surviving_leases(tmp_path: Path) -> None:
    conf = net_conf(tmp_path)
    for i in range(10):
        assert run_plugin(PLUGIN, "ADD", conf, container_id=f"old{i}").returncode == 0
    procs = [start_plugin(PLUGIN, "DEL", conf, container_id=f"old{i}") for i in range(10)]
    procs += [start_plugin(PLUGIN, "ADD", conf, container_id=f"new{i}") for i in range(20)]
    for proc in procs:
        finish(proc)
        assert proc.returncode == 0
    owners = sorted(leases_in(tmp_path).values())
    assert owners == sorted(f"new{i}\r\neth0".encode() for i in range(20))
