"""The server around the services: reflection (what `grpcurl list` sees), the standard
health service, the socket (mode, stale socket, a regular file in the way, nothing else
next to it), endpoint selection, graceful SIGTERM, one JSON log line per RPC with secrets
redacted, and required secrets."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from csi_protos import csi_pb2, csi_pb2_grpc
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import GiB, expect_error_code, make_create_volume_req
from tests.fixtures.driver_process import (
    PYTHON,
    REPO,
    DriverProcess,
    log_lines,
    rpc_lines,
    short_tmpdir,
    unmount_under,
)

CSI_SERVICES = {
    "csi.v1.Identity",
    "csi.v1.Controller",
    "csi.v1.GroupController",
    "csi.v1.SnapshotMetadata",
    "csi.v1.Node",
}
SECRET_VALUE = "s3cr3t-do-not-log"


class TestDiscovery:
    def test_reflection_lists_the_five_csi_services(self, driver: DriverProcess) -> None:
        db = ProtoReflectionDescriptorDatabase(driver.stubs.channel)
        assert set(db.get_services()) >= CSI_SERVICES

    def test_reflection_describes_a_method_without_a_local_proto(
        self, driver: DriverProcess
    ) -> None:
        pool = descriptor_pool.DescriptorPool(
            ProtoReflectionDescriptorDatabase(driver.stubs.channel)
        )
        service = pool.FindServiceByName("csi.v1.Controller")
        method = service.methods_by_name["CreateVolume"]
        assert method.input_type.full_name == "csi.v1.CreateVolumeRequest"
        assert method.output_type.full_name == "csi.v1.CreateVolumeResponse"

    def test_probe_sets_ready_explicitly(self, driver: DriverProcess) -> None:
        """DESIGN.md: a serving driver answers Probe with ``ready`` set, and true."""
        rsp = driver.stubs.identity.Probe(csi_pb2.ProbeRequest())
        assert rsp.HasField("ready") and rsp.ready.value is True

    def test_health_service_reports_serving(self, driver: DriverProcess) -> None:
        stub = health_pb2_grpc.HealthStub(driver.stubs.channel)
        rsp = stub.Check(health_pb2.HealthCheckRequest(service=""))
        assert rsp.status == health_pb2.HealthCheckResponse.SERVING


class TestSocket:
    def test_socket_mode_defaults_to_0600(self, driver: DriverProcess) -> None:
        mode = os.stat(driver.socket_path).st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600

    def test_socket_mode_flag_widens_it(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver("--socket-mode", "0660")
        assert stat.S_IMODE(os.stat(proc.socket_path).st_mode) == 0o660

    def test_nothing_else_is_written_next_to_the_socket(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver()
        proc.stubs.controller.CreateVolume(make_create_volume_req("beside", GiB))
        assert os.listdir(proc.sock_dir) == ["csi.sock"]

    def test_a_stale_socket_is_replaced(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver(start=False)
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(str(proc.socket_path))
        stale.close()  # the file stays, nobody listens
        proc.start()
        proc.stubs.identity.Probe(csi_pb2.ProbeRequest())

    def test_a_regular_file_at_the_socket_path_is_refused_and_left_untouched(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver(start=False)
        proc.socket_path.write_text("precious")
        status = proc.spawn().wait(timeout=30)
        assert status != 0
        assert proc.socket_path.read_text() == "precious"
        message = proc.stderr()
        assert str(proc.socket_path) in message and "Traceback" not in message

    @pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
    def test_a_stop_signal_stops_gracefully_and_removes_the_socket(
        self, spawn_driver: SpawnDriver, sig: signal.Signals
    ) -> None:
        proc = spawn_driver()
        assert proc.proc is not None
        proc.close_channel()
        proc.proc.send_signal(sig)
        assert proc.proc.wait(timeout=15) == 0
        assert not proc.socket_path.exists()
        assert os.listdir(proc.sock_dir) == []


class TestEndpoint:
    def run_raw(self, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [PYTHON, "-m", "csi_driver", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def test_missing_endpoint_exits_2_with_a_clear_message(self, shared_state_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "CSI_ENDPOINT"}
        proc = self.run_raw(["--state-dir", str(shared_state_dir)], env)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2
        assert b"endpoint" in err.lower() and b"Traceback" not in err

    @pytest.mark.parametrize("form", ["env", "bare-path"])
    def test_endpoint_from_csi_endpoint_or_a_bare_path(self, form: str) -> None:
        sock_dir = short_tmpdir("csie")
        sock = sock_dir / "csi.sock"
        env = dict(os.environ)
        args = ["--state-dir", str(sock_dir / "state")]
        if form == "env":
            env["CSI_ENDPOINT"] = f"unix://{sock}"
        else:
            args += ["--endpoint", str(sock)]
        proc = self.run_raw(args, env)
        try:
            with grpc.insecure_channel(f"unix://{sock}") as channel:
                grpc.channel_ready_future(channel).result(timeout=30)
                stub = csi_pb2_grpc.IdentityStub(channel)
                assert stub.Probe(csi_pb2.ProbeRequest()).ready.value
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            unmount_under(sock_dir)
            shutil.rmtree(sock_dir, ignore_errors=True)


class TestLogging:
    def test_one_json_line_per_rpc_with_secrets_redacted(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver()
        req = make_create_volume_req("logged", GiB)
        req.secrets["token"] = SECRET_VALUE
        proc.stubs.controller.CreateVolume(req)
        with pytest.raises(grpc.RpcError):
            proc.stubs.controller.ControllerGetVolume(
                csi_pb2.ControllerGetVolumeRequest(volume_id="missing")
            )
        created = log_lines(proc, "CreateVolume")
        assert len(created) == 1
        entry = created[0]
        assert {"ts", "method", "request", "code", "duration_ms"} <= set(entry)
        assert entry["request"]["name"] == "logged"
        assert SECRET_VALUE not in json.dumps(entry)
        assert entry["code"] in ("OK", 0)
        assert isinstance(entry["duration_ms"], int | float) and entry["duration_ms"] >= 0
        failed = log_lines(proc, "ControllerGetVolume")
        assert failed and failed[0]["code"] in ("NOT_FOUND", 5)
        assert SECRET_VALUE not in proc.stderr()

    def test_every_rpc_gets_exactly_one_line_even_when_it_fails_or_streams(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver()
        before = len(log_lines(proc, "Probe"))
        start = len(rpc_lines(proc))
        stubs = proc.stubs
        stubs.identity.GetPluginInfo(csi_pb2.GetPluginInfoRequest())
        stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest())
        with pytest.raises(grpc.RpcError):
            stubs.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest())
        with pytest.raises(grpc.RpcError):
            list(
                stubs.snapshot_metadata.GetMetadataAllocated(
                    csi_pb2.GetMetadataAllocatedRequest(snapshot_id="none")
                )
            )
        stubs.identity.Probe(csi_pb2.ProbeRequest())
        assert len(log_lines(proc, "Probe", wanted=before + 1)) == before + 1
        methods = [e["method"].rsplit("/", 1)[-1] for e in rpc_lines(proc)[start:]]
        assert methods == [
            "GetPluginInfo", "ListVolumes", "DeleteVolume", "GetMetadataAllocated", "Probe"
        ]  # fmt: skip

    def test_a_failure_logs_its_error_message_and_a_success_none(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver()
        with pytest.raises(grpc.RpcError) as err:
            proc.stubs.controller.ControllerGetVolume(
                csi_pb2.ControllerGetVolumeRequest(volume_id="missing-volume")
            )
        proc.stubs.identity.GetPluginInfo(csi_pb2.GetPluginInfoRequest())
        failed = log_lines(proc, "ControllerGetVolume")[0]
        assert failed["code"] == "NOT_FOUND"
        assert failed["error"] == err.value.details() and "missing-volume" in failed["error"]
        assert "error" not in log_lines(proc, "GetPluginInfo")[0]

    def test_creates_log_the_ids_they_answered_with(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver()
        ctrl = proc.stubs.controller
        vid = ctrl.CreateVolume(make_create_volume_req("with-ids", GiB)).volume.volume_id
        sid = ctrl.CreateSnapshot(
            csi_pb2.CreateSnapshotRequest(name="with-ids-snap", source_volume_id=vid)
        ).snapshot.snapshot_id
        group = proc.stubs.group_controller.CreateVolumeGroupSnapshot(
            csi_pb2.CreateVolumeGroupSnapshotRequest(name="with-ids-group", source_volume_ids=[vid])
        ).group_snapshot
        assert log_lines(proc, "/CreateVolume")[0]["volume_id"] == vid
        assert log_lines(proc, "/CreateSnapshot")[0]["snapshot_id"] == sid
        entry = log_lines(proc, "/CreateVolumeGroupSnapshot")[0]
        assert entry["group_snapshot_id"] == group.group_snapshot_id
        assert entry["snapshot_ids"] == [s.snapshot_id for s in group.snapshots]

    def test_a_refused_secret_stays_out_of_the_error_and_the_log(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver()
        req = make_create_volume_req("nul-secret", GiB)
        req.secrets["token"] = SECRET_VALUE + "\0"
        err = expect_error_code(proc.stubs.controller.CreateVolume, req,
                                grpc.StatusCode.INVALID_ARGUMENT)
        details = err.details() or ""
        assert "secrets" in details and SECRET_VALUE not in details
        assert log_lines(proc, "/CreateVolume")[0]["error"] == err.details()
        assert SECRET_VALUE not in proc.stderr()

    def test_a_node_secret_is_not_logged_either(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver()
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id="nope",
            staging_target_path="/nonexistent-stage",
            volume_capability=csi_pb2.VolumeCapability(
                access_mode=csi_pb2.VolumeCapability.AccessMode(
                    mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
                ),
                mount=csi_pb2.VolumeCapability.MountVolume(),
            ),
            secrets={"password": SECRET_VALUE},
        )
        with pytest.raises(grpc.RpcError):
            proc.stubs.node.NodeStageVolume(req)
        assert log_lines(proc, "NodeStageVolume")
        assert SECRET_VALUE not in proc.stderr()


class TestCommandLine:
    def test_every_flag_in_help_has_a_help_text_and_shows_its_default(self) -> None:
        from csi_driver.cli import build_parser

        env = dict(os.environ, COLUMNS="100")
        out = subprocess.run([PYTHON, "-m", "csi_driver", "--help"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=30, check=True).stdout
        options = out.split("options:", 1)[1]
        blocks: dict[str, str] = {}  # first flag of an entry → its text after the flags
        for entry in re.split(r"\n(?=  -)", options):
            flags = re.findall(r"^\s*(-[^ ]*(?: [A-Z_={},|a-z-]+)?(?:, -[^ ]*)*)", entry)
            if flags:
                text = entry.strip()[len(flags[0].strip()):]
                blocks[flags[0].split()[0].rstrip(",")] = " ".join(text.split())
        wanted = [a.option_strings[0] for a in build_parser()._actions
                  if a.option_strings and a.dest != "help"]
        assert wanted and set(wanted) <= set(blocks), sorted(set(wanted) - set(blocks))
        for flag in wanted:
            text = blocks[flag]
            assert "default:" in text, f"{flag} does not show its default: {text!r}"
            described = re.sub(r"\(?default:[^)]*\)?", "", text)
            assert len(described.split()) >= 3, f"{flag} has no help text: {text!r}"

    @pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
    def test_without_state_dir_the_first_log_line_says_where_state_goes(self) -> None:
        """As root the default is /var/lib/csi-mini: the driver runs in a private mount
        namespace with a tmpfs over /var/lib, so the host's directory is never touched;
        otherwise HOME points into a temp dir."""
        sock_dir = short_tmpdir("csil")
        env = {k: v for k, v in os.environ.items() if k != "CSI_ENDPOINT"}
        argv = [PYTHON, "-m", "csi_driver", "--endpoint", f"unix://{sock_dir}/csi.sock"]
        if os.geteuid() == 0:
            expected = "/var/lib/csi-mini"
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount -t tmpfs csi-test /var/lib && exec "$@"', "sh", *argv]
        else:
            env["HOME"] = str(sock_dir / "home")
            expected = str(sock_dir / "home" / ".local" / "state" / "csi-mini")
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline()
        finally:
            proc.terminate()
            proc.communicate(timeout=15)
            shutil.rmtree(sock_dir, ignore_errors=True)
        assert f"state goes to {expected} " in first and "--state-dir" in first, first


class TestRequiredSecrets:
    RIGHT = "right-7f3a"
    WRONG = "wrong-9c2e"

    @pytest.fixture
    def guarded(self, spawn_driver: SpawnDriver) -> DriverProcess:
        return spawn_driver("--secret", f"token={self.RIGHT}")

    def test_missing_secret_is_invalid_argument(self, guarded: DriverProcess) -> None:
        req = make_create_volume_req("guarded", GiB)
        expect_error_code(
            guarded.stubs.controller.CreateVolume, req, grpc.StatusCode.INVALID_ARGUMENT
        )

    def test_wrong_secret_is_unauthenticated(self, guarded: DriverProcess) -> None:
        req = make_create_volume_req("guarded", GiB)
        req.secrets["token"] = self.WRONG
        expect_error_code(
            guarded.stubs.controller.CreateVolume, req, grpc.StatusCode.UNAUTHENTICATED
        )
        assert log_lines(guarded, "CreateVolume")
        assert self.WRONG not in guarded.stderr()

    def test_right_secret_is_accepted_and_rpcs_without_secrets_are_unaffected(
        self, guarded: DriverProcess
    ) -> None:
        req = make_create_volume_req("guarded", GiB)
        req.secrets["token"] = self.RIGHT
        guarded.stubs.controller.CreateVolume(req)
        guarded.stubs.identity.Probe(csi_pb2.ProbeRequest())
        guarded.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest())
        assert log_lines(guarded, "ListVolumes")
        assert self.RIGHT not in guarded.stderr()

    def test_node_rpcs_with_a_secrets_field_are_guarded_too(self, guarded: DriverProcess) -> None:
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id="v",
            staging_target_path="/tmp",
            volume_capability=csi_pb2.VolumeCapability(
                access_mode=csi_pb2.VolumeCapability.AccessMode(
                    mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
                ),
                mount=csi_pb2.VolumeCapability.MountVolume(),
            ),
        )
        expect_error_code(guarded.stubs.node.NodeStageVolume, req, grpc.StatusCode.INVALID_ARGUMENT)
        guarded.stubs.node.NodeGetCapabilities(csi_pb2.NodeGetCapabilitiesRequest())

    def test_requests_the_e2e_mock_leaves_unguarded_need_no_secrets(
        self, guarded: DriverProcess
    ) -> None:
        """Like kubernetes-csi/csi-test's mock: expand, modify and node expand carry
        secrets only when a CO is configured to (csi-sanity has no node-expand secret),
        so they are answered on their merits; GetSnapshot is guarded."""
        expect_error_code(
            guarded.stubs.controller.ControllerExpandVolume,
            csi_pb2.ControllerExpandVolumeRequest(
                volume_id="missing", capacity_range=csi_pb2.CapacityRange(required_bytes=GiB)),
            grpc.StatusCode.NOT_FOUND,
        )
        expect_error_code(
            guarded.stubs.controller.ControllerModifyVolume,
            csi_pb2.ControllerModifyVolumeRequest(
                volume_id="missing", mutable_parameters={"iops": "1"}),
            grpc.StatusCode.NOT_FOUND,
        )
        expect_error_code(
            guarded.stubs.node.NodeExpandVolume,
            csi_pb2.NodeExpandVolumeRequest(volume_id="missing", volume_path="/tmp/missing"),
            grpc.StatusCode.NOT_FOUND,
        )
        expect_error_code(
            guarded.stubs.controller.GetSnapshot,
            csi_pb2.GetSnapshotRequest(snapshot_id="missing"),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
