"""Stdin that is not a network configuration, given to our executables as real processes.

Every command that reads stdin (all but VERSION) answers a document it cannot decode with
the spec's code 6 (decoding failure) on stdout and exit status 1, as the reference plugins
do; input that ends early reads exactly as theirs: "unexpected end of JSON input".
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cni_plugin.install import EXECUTABLES
from cni_spec.errors import ERR_DECODING_FAILURE, ERR_INVALID_NETWORK_CONFIG
from cni_spec.gojson import MAX_DEPTH
from tests.fixtures.netns import REFERENCE_DIR, needs_reference

from .procharness import Proc, cni_env, exec_plugin

STDIN_COMMANDS = ("ADD", "CHECK", "DEL", "GC", "STATUS")
TRUNCATED = ('{', '{"a"', '{"a":1,', '{"cniVersion":"1.1.0","name":"n', '[', '')
END_OF_INPUT = "error unmarshall network config: unexpected end of JSON input"
DEPTH = 1000
NESTED = {
    "arrays in a field": '{"name":"n","x":' + "[" * DEPTH + "]" * DEPTH + "}",
    "objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
}
# A document that is no object is undecodable; an object without a name is no configuration.
REFUSALS = (ERR_DECODING_FAILURE, ERR_INVALID_NETWORK_CONFIG)
ERROR_KEYS = {"cniVersion", "code", "msg", "details"}


def run(cni_bin: str, name: str, command: str, stdin: bytes | str, sandbox: str) -> Proc:
    return exec_plugin(f"{cni_bin}/{name}", cni_env(command, "c1", sandbox, "eth0", cni_bin),
                       stdin)


def error_reply(proc: Proc) -> dict[str, Any]:
    """The reply of a failed command: a CNI error object on stdout, exit status 1."""
    assert proc.status == 1, (proc.status, proc.stdout, proc.stderr)
    reply = proc.json()
    assert isinstance(reply, dict) and set(reply) <= ERROR_KEYS and {"code", "msg"} <= set(reply)
    return reply


@pytest.mark.parametrize("command", STDIN_COMMANDS)
@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_truncated_json_is_a_decoding_failure_at_its_end(name: str, command: str, cni_bin: str,
                                                          sandbox: str) -> None:
    for stdin in TRUNCATED:
        reply = error_reply(run(cni_bin, name, command, stdin, sandbox))
        assert reply == {"cniVersion": "1.1.0", "code": ERR_DECODING_FAILURE,
                         "msg": END_OF_INPUT}, stdin


@pytest.mark.parametrize("command", STDIN_COMMANDS)
@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_json_nested_a_thousand_deep_is_a_decoding_failure(name: str, command: str,
                                                           cni_bin: str, sandbox: str) -> None:
    for shape, stdin in NESTED.items():
        reply = error_reply(run(cni_bin, name, command, stdin, sandbox))
        assert set(reply) == {"cniVersion", "code", "msg"}
        assert reply["code"] == ERR_DECODING_FAILURE, shape
        assert reply["msg"].startswith(
            f"error unmarshall network config: exceeded max depth of {MAX_DEPTH}: "), shape


def test_the_same_depth_limit_holds_wherever_a_plugin_parses_its_stdin(cni_bin: str,
                                                                        sandbox: str) -> None:
    """The skel and then the plugin parse stdin at different stack depths: both must
    agree, so a config nested up to the limit is served and one level more is refused."""
    def conf(depth: int) -> str:  # the object itself is the first level
        inner = depth - 1
        return '{"cniVersion":"1.1.0","name":"n","x":' + "[" * inner + "]" * inner + "}"

    served = run(cni_bin, "emu-noop", "ADD", conf(MAX_DEPTH), sandbox)
    assert (served.status, served.json()) == (0, {"cniVersion": "1.1.0"})
    refused = error_reply(run(cni_bin, "emu-noop", "ADD", conf(MAX_DEPTH + 1), sandbox))
    assert refused["code"] == ERR_DECODING_FAILURE


@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_a_syntax_error_names_the_decoders_reason_and_position(name: str, cni_bin: str,
                                                               sandbox: str) -> None:
    reply = error_reply(run(cni_bin, name, "ADD", '{"name" "n"}', sandbox))
    assert (reply["code"], reply["msg"]) == (
        ERR_DECODING_FAILURE,
        "error unmarshall network config: Expecting ':' delimiter: line 1 column 9 (char 8)")


@needs_reference
@pytest.mark.reference
@pytest.mark.parametrize("command", ["ADD", "DEL"])
@pytest.mark.parametrize("ours,reference", [("emu-bridge", "bridge"),
                                            ("emu-host-local", "host-local"),
                                            ("emu-loopback", "loopback")])
def test_truncated_json_answers_as_the_reference_plugin(ours: str, reference: str, command: str,
                                                        cni_bin: str, sandbox: str) -> None:
    for stdin in TRUNCATED:
        env = cni_env(command, "c1", sandbox, "eth0", cni_bin)
        theirs = error_reply(exec_plugin(f"{REFERENCE_DIR}/{reference}", env, stdin))
        mine = error_reply(run(cni_bin, ours, command, stdin, sandbox))
        assert (mine["code"], mine["msg"]) == (theirs["code"], theirs["msg"]), stdin


# -- bounded fuzz over stdin bytes -----------------------------------------------------------

VALID = json.dumps({"cniVersion": "1.1.0", "name": "fuzznet", "type": "emu-bridge",
                    "bridge": "fz0", "ipam": {"type": "emu-host-local",
                                              "subnet": "10.9.0.0/24"}},
                   separators=(",", ":")).encode()


def _refuse_constant(name: str) -> None:
    raise ValueError(name)


def decoded(data: bytes) -> tuple[bool, Any]:
    """(True, document) when data is one JSON text as Go reads it (UTF-8, no NaN)."""
    try:
        return True, json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except ValueError:
        return False, None


@st.composite
def stdin_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["prefix", "mutated", "random"]))
    if kind == "prefix":
        return VALID[:draw(st.integers(0, len(VALID) - 1))]
    if kind == "mutated":
        at = draw(st.integers(0, len(VALID) - 1))
        byte = bytes([draw(st.integers(0, 255))])
        if draw(st.booleans()):
            return VALID[:at] + byte + VALID[at:]
        return VALID[:at] + byte + VALID[at + 1:]
    return draw(st.binary(max_size=48))


@settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(data=stdin_bytes(), name=st.sampled_from(sorted(EXECUTABLES)),
       command=st.sampled_from(STDIN_COMMANDS))
def test_any_stdin_that_is_no_configuration_is_refused_with_a_cni_error(
        data: bytes, name: str, command: str, cni_bin: str, sandbox: str) -> None:
    ok, document = decoded(data)
    # A named object is a configuration the plugin may act on: not this test's subject.
    assume(not (ok and isinstance(document, dict) and "name" in document))
    reply = error_reply(run(cni_bin, name, command, data, sandbox))
    assert reply["code"] in REFUSALS, reply
    if not ok:
        assert reply["code"] == ERR_DECODING_FAILURE, reply
