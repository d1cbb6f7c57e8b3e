"""The skel: env table, CNI_ARGS, version negotiation and gates, error JSON, result printing."""

from __future__ import annotations

import pytest

from cni_plugin.skel import CmdArgs, Handlers
from cni_spec.errors import CNIError
from cni_spec.types import Interface, IPConfig, Result, Route
from cni_spec.version import ALL_VERSIONS

from .skelharness import base_env, run_in_process

CONF = {"cniVersion": "1.0.0", "name": "net1", "type": "t"}


class Recorder:
    """Handlers that record what they were called with and answer a fixed result."""

    def __init__(self, result: Result | None = None, fail: Exception | None = None) -> None:
        self.calls: list[CmdArgs] = []
        self.result = result or Result(ips=[IPConfig(address="10.1.0.2/24", gateway="10.1.0.1")])
        self.fail = fail

    def _record(self, args: CmdArgs) -> None:
        self.calls.append(args)
        if self.fail is not None:
            raise self.fail

    def add(self, args: CmdArgs) -> Result:
        self._record(args)
        return self.result

    def delete(self, args: CmdArgs) -> None:
        self._record(args)

    def check(self, args: CmdArgs) -> None:
        self._record(args)

    def handlers(self) -> Handlers:
        return Handlers(add=self.add, delete=self.delete, check=self.check,
                        status=self._record, gc=self._record)


def test_add_hands_parsed_env_to_the_handler() -> None:
    rec = Recorder()
    env = base_env("ADD", CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=p", CNI_PATH="/a:/b")
    out = run_in_process(rec.handlers(), env, CONF)
    assert out.status == 0, out.stdout
    (call,) = rec.calls
    assert (call.command, call.container_id, call.netns, call.ifname) == \
        ("ADD", "ctr1", "/var/run/netns/x", "eth0")
    assert call.args == {"IgnoreUnknown": "1", "K8S_POD_NAME": "p"}
    assert call.path == ["/a", "/b"]
    assert call.args_raw == "IgnoreUnknown=1;K8S_POD_NAME=p"


def test_all_missing_required_variables_are_reported_at_once_with_code_4() -> None:
    out = run_in_process(Recorder().handlers(), {"CNI_COMMAND": "ADD"}, CONF)
    assert out.status == 1
    assert out.json()["code"] == 4
    assert out.json()["msg"] == \
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing"


def test_del_does_not_need_a_netns() -> None:
    env = base_env("DEL")
    del env["CNI_NETNS"]
    rec = Recorder()
    assert run_in_process(rec.handlers(), env, CONF).status == 0
    assert rec.calls[0].netns == ""


@pytest.mark.parametrize("command", ["GC", "STATUS"])
def test_gc_and_status_need_only_the_command_and_path(command: str) -> None:
    rec = Recorder()
    out = run_in_process(rec.handlers(), {"CNI_COMMAND": command, "CNI_PATH": "/x"},
                         {**CONF, "cniVersion": "1.1.0"})
    assert out.status == 0 and out.stdout == ""
    assert rec.calls[0].command == command


def test_unknown_command_fails_with_code_4() -> None:
    out = run_in_process(Recorder().handlers(), {"CNI_COMMAND": "FOO"}, CONF)
    assert out.status == 1
    assert (out.json()["code"], out.json()["msg"]) == (4, "unknown CNI_COMMAND: FOO")


def test_no_command_prints_about_text_to_stderr_and_exits_zero() -> None:
    out = run_in_process(Recorder().handlers(), {}, CONF, about="CNI test plugin")
    assert out.status == 0 and out.stdout == ""
    assert out.stderr.startswith("CNI test plugin\nCNI protocol versions supported: 0.1.0,")


@pytest.mark.parametrize("cid", ["-leading-dash", "a/b", "../x", "a b", "ü"])
def test_container_id_with_invalid_characters_fails_with_code_4(cid: str) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD", CNI_CONTAINERID=cid), CONF)
    body = out.json()
    assert (body["code"], body["msg"], body["details"]) == \
        (4, "invalid characters in containerID", cid)


@pytest.mark.parametrize(("ifname", "msg"), [
    ("a" * 16, "interface name is too long"),
    (".", "interface name is . or .."),
    ("..", "interface name is . or .."),
    ("a/b", "interface name contains / or : or whitespace characters"),
    ("a:b", "interface name contains / or : or whitespace characters"),
    ("a b", "interface name contains / or : or whitespace characters"),
    ("a\tb", "interface name contains / or : or whitespace characters"),
])
def test_bad_interface_names_fail_with_code_4(ifname: str, msg: str) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD", CNI_IFNAME=ifname), CONF)
    assert out.status == 1
    assert (out.json()["code"], out.json()["msg"]) == (4, msg)


def test_fifteen_character_interface_name_is_accepted() -> None:
    assert run_in_process(Recorder().handlers(), base_env("ADD", CNI_IFNAME="a" * 15),
                          CONF).status == 0


@pytest.mark.parametrize("stdin", [b"garbage", b"[1,2]", b""])
def test_malformed_stdin_fails_with_code_6(stdin: bytes) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), stdin)
    assert out.status == 1
    assert out.json()["code"] == 6
    assert out.json()["msg"].startswith("error unmarshall network config: ")


def test_missing_network_name_fails_with_code_7() -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), {"cniVersion": "1.0.0"})
    assert (out.json()["code"], out.json()["msg"]) == (7, "missing network name")


def test_network_name_that_could_traverse_paths_fails_with_code_7() -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), {**CONF, "name": "../etc"})
    assert out.json()["code"] == 7
    assert out.json()["details"] == "../etc"


def test_unsupported_config_version_fails_with_code_1_listing_supported() -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), {**CONF, "cniVersion": "9.9.9"})
    body = out.json()
    assert (out.status, body["code"], body["msg"]) == (1, 1, "incompatible CNI versions")
    assert body["details"].startswith('config is "9.9.9", plugin supports ["0.1.0" "0.2.0"')


def test_missing_cni_version_means_0_1_0() -> None:
    rec = Recorder()
    out = run_in_process(rec.handlers(), base_env("ADD"), {"name": "n"})
    assert out.status == 0
    assert out.json()["cniVersion"] == "0.1.0"
    assert out.json()["ip4"] == {"ip": "10.1.0.2/24", "gateway": "10.1.0.1"}


def test_plugin_supporting_fewer_versions_rejects_the_others() -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), {**CONF, "cniVersion": "0.2.0"},
                         supported=("1.0.0", "1.1.0"))
    assert out.json()["code"] == 1


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_check_needs_config_version_0_4_0(version: str) -> None:
    rec = Recorder()
    out = run_in_process(rec.handlers(), base_env("CHECK"), {**CONF, "cniVersion": version})
    if version in ("0.1.0", "0.2.0", "0.3.0", "0.3.1"):
        assert (out.status, out.json()["code"], out.json()["msg"]) == \
            (1, 1, "config version does not allow CHECK")
        assert rec.calls == []
    else:
        assert (out.status, out.stdout) == (0, "")
        assert len(rec.calls) == 1


@pytest.mark.parametrize("command", ["GC", "STATUS"])
@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_gc_and_status_need_config_version_1_1_0(command: str, version: str) -> None:
    rec = Recorder()
    out = run_in_process(rec.handlers(), base_env(command), {**CONF, "cniVersion": version})
    if version != "1.1.0":
        assert out.json()["msg"] == f"config version does not allow {command}"
        assert out.json()["code"] == 1
    else:
        assert out.status == 0 and len(rec.calls) == 1


def test_check_with_unparseable_version_is_a_decode_failure() -> None:
    out = run_in_process(Recorder().handlers(), base_env("CHECK"), {**CONF, "cniVersion": "x.y"})
    assert out.json()["code"] == 6


def test_status_without_handler_succeeds_silently() -> None:
    rec = Recorder()
    handlers = Handlers(add=rec.add, delete=rec.delete)
    out = run_in_process(handlers, base_env("STATUS"), {**CONF, "cniVersion": "1.1.0"})
    assert (out.status, out.stdout) == (0, "")


@pytest.mark.parametrize("conf", [b"garbage", b'{"cniVersion":"0.1.0"}', b"{}"])
def test_version_prints_supported_versions_whatever_the_config(conf: bytes) -> None:
    out = run_in_process(Recorder().handlers(), {"CNI_COMMAND": "VERSION"}, conf)
    assert out.status == 0
    assert out.stdout == ('{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0",'
                          '"0.3.1","0.4.0","1.0.0","1.1.0"]}\n')


def test_plugin_cni_error_is_printed_with_its_code_on_stdout() -> None:
    rec = Recorder(fail=CNIError(11, "busy", "try later"))
    out = run_in_process(rec.handlers(), base_env("ADD"), CONF)
    assert out.status == 1
    assert out.stdout == ('{\n    "cniVersion": "1.0.0",\n    "code": 11,\n    "msg": "busy",\n'
                          '    "details": "try later"\n}')


def test_unexpected_exception_becomes_code_999_with_a_clear_message() -> None:
    rec = Recorder(fail=ZeroDivisionError("division by zero"))
    out = run_in_process(rec.handlers(), base_env("DEL"), CONF, about="CNI bridge plugin")
    body = out.json()
    assert (out.status, body["code"]) == (1, 999)
    assert body["msg"] == \
        "unexpected error in CNI bridge plugin: ZeroDivisionError: division by zero"
    assert "test_skel.py" in body["details"]


def test_result_printed_with_four_space_indent_in_reference_key_order() -> None:
    result = Result(interfaces=[Interface(name="eth0", mac="aa:bb:cc:dd:ee:ff", sandbox="/ns")],
                    ips=[IPConfig(address="10.1.0.2/24", gateway="10.1.0.1", interface=0)],
                    routes=[Route(dst="0.0.0.0/0", gw="10.1.0.1")])
    out = run_in_process(Recorder(result).handlers(), base_env("ADD"), CONF)
    assert out.stdout == """{
    "cniVersion": "1.0.0",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "aa:bb:cc:dd:ee:ff",
            "sandbox": "/ns"
        }
    ],
    "ips": [
        {
            "interface": 0,
            "address": "10.1.0.2/24",
            "gateway": "10.1.0.1"
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.1.0.1"
        }
    ],
    "dns": {}
}"""


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_result_is_printed_in_the_config_version(version: str) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD"), {**CONF, "cniVersion": version})
    body = out.json()
    assert body["cniVersion"] == version
    if version in ("0.1.0", "0.2.0"):
        assert body["ip4"]["ip"] == "10.1.0.2/24"
    elif version.startswith("0."):
        assert body["ips"][0]["version"] == "4"
    else:
        assert "version" not in body["ips"][0]


@pytest.mark.parametrize(("args", "ok"), [
    ("", True),
    ("IP=10.0.0.5", True),
    ("FOO=bar", False),
    ("IgnoreUnknown=1;FOO=bar", True),
    ("IgnoreUnknown=true;FOO=bar", True),
    ("IgnoreUnknown=TRUE;FOO=bar", True),
    ("IgnoreUnknown=0;FOO=bar", False),
    ("IgnoreUnknown=false;FOO=bar", False),
])
def test_cni_args_unknown_keys_fail_unless_ignore_unknown(args: str, ok: bool) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD", CNI_ARGS=args), CONF,
                         known_args=frozenset({"IP"}))
    if ok:
        assert out.status == 0, out.stdout
    else:
        assert (out.status, out.json()["code"]) == (1, 999)
        assert out.json()["msg"] == 'ARGS: unknown args ["FOO=bar"]'


@pytest.mark.parametrize(("args", "msg"), [
    ("FOO", 'ARGS: invalid pair "FOO"'),
    ("A=1;", 'ARGS: invalid pair ""'),
    ("A=1=2", 'ARGS: invalid pair "A=1=2"'),
    ("IgnoreUnknown=maybe",
     'ARGS: error parsing value of pair "IgnoreUnknown=maybe": '
     "boolean unmarshal error: invalid input maybe"),
])
def test_malformed_cni_args_fail_as_the_reference_does(args: str, msg: str) -> None:
    out = run_in_process(Recorder().handlers(), base_env("ADD", CNI_ARGS=args), CONF,
                         known_args=frozenset({"A"}))
    assert out.json()["msg"] == msg


def test_plugin_that_reads_no_cni_args_leaves_them_alone() -> None:
    rec = Recorder()
    out = run_in_process(rec.handlers(), base_env("ADD", CNI_ARGS="FOO=bar;X"), CONF)
    assert out.status == 0
    assert rec.calls[0].args == {"FOO": "bar"}
