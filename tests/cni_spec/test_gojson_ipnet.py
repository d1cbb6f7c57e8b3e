"""The light JSON and IP helpers the exec path uses instead of json and ipaddress."""

from __future__ import annotations

import ipaddress
import json
import socket

import pytest

from cni_plugin.ipam import addr
from cni_plugin.skel import CmdArgs
from cni_spec import ipnet
from cni_spec.gojson import (
    MAX_DEPTH,
    dumps_compact,
    dumps_compact_slow,
    dumps_indent,
    go_quote_list,
    loads,
)

DOCS = ['{"a": [1, 2, {"b": null}], "c": "x", "d": {}, "e": [], "f": true, "g": -3}',
        ' [ "\\u00fc", "\\n", false ] ', '"just a string"', "0"]


@pytest.mark.parametrize("doc", DOCS)
def test_loads_agrees_with_json(doc: str) -> None:
    assert loads(doc) == json.loads(doc)
    assert loads(doc.encode()) == json.loads(doc)


@pytest.mark.parametrize("doc", ["", "garbage", '{"a": 1} trailing', '{"a":', "NaN", b"\xff"])
def test_loads_rejects_what_is_not_one_json_document(doc: str | bytes) -> None:
    with pytest.raises(ValueError):
        loads(doc)


@pytest.mark.parametrize("doc", ["", "  ", "{", '{"a"', '{"a":1,', '{"a": "b', '"x\\', "[", "[1 "])
def test_loads_says_where_input_ends_early_as_go_does(doc: str) -> None:
    with pytest.raises(ValueError, match=r"^unexpected end of JSON input$"):
        loads(doc)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000])
def test_loads_refuses_nesting_deeper_than_its_maximum_depth(depth: int) -> None:
    for doc in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        with pytest.raises(ValueError, match=rf"^exceeded max depth of {MAX_DEPTH}: line 1 "):
            loads(doc)


def test_loads_decodes_nesting_up_to_its_maximum_depth_and_brackets_in_strings_are_text(
) -> None:
    doc = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(doc) == json.loads(doc)
    text = '{"s": "' + '[{\\\"' * MAX_DEPTH + '", "t": [[1]]}'
    assert loads(text) == json.loads(text)


def test_loads_names_the_reason_and_position_of_a_syntax_error() -> None:
    with pytest.raises(ValueError) as info:
        loads('{"a" 1}')
    assert str(info.value) == "Expecting ':' delimiter: line 1 column 6 (char 5)"


@pytest.mark.parametrize("doc", DOCS)
def test_dumps_writes_what_go_marshal_indent_writes(doc: str) -> None:
    obj = json.loads(doc)
    assert dumps_indent(obj) == json.dumps(obj, indent=4, ensure_ascii=False)
    assert dumps_compact(obj) == json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def test_dumps_escapes_html_characters_as_go_does() -> None:
    assert dumps_compact({"msg": "a<b>&c"}) == '{"msg":"a\\u003cb\\u003e\\u0026c"}'


def test_go_quote_list_formats_like_percent_q_of_a_slice() -> None:
    assert go_quote_list(["A=1", 'B="x"']) == '["A=1" "B=\\"x\\""]'


@pytest.mark.parametrize("text", ["10.1.2.3/24", "FD00:0:0::02/64", "::/0", "0.0.0.0/0",
                                  "2001:db8::ffff:0:1/128", "1:0:0:1:0:0:0:1/64"])
def test_canonical_cidr_matches_ipaddress(text: str) -> None:
    assert ipnet.canonical_cidr(text) == str(ipaddress.ip_interface(text))


@pytest.mark.parametrize("text", ["10.0.0.300/24", "10.0.0.1/33", "10.0.0.1", "fd00::/129",
                                  "x/1", "10.0.0.1/-1"])
def test_invalid_cidrs_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        ipnet.parse_cidr(text)


def test_network_gateway_and_containment() -> None:
    assert ipnet.network_of("10.1.2.3/16") == "10.1.0.0/16"
    assert ipnet.first_host("10.1.2.3/16") == "10.1.0.1"
    assert ipnet.first_host("fd00::5/64") == "fd00::1"
    assert ipnet.contains("10.1.0.0/16", "10.1.255.1")
    assert not ipnet.contains("10.1.0.0/16", "10.2.0.1")
    assert not ipnet.contains("10.1.0.0/16", "fd00::1")
    assert ipnet.is_link_local_or_loopback("fe80::1/64")
    assert ipnet.is_link_local_or_loopback("127.0.0.1/8")
    assert not ipnet.is_link_local_or_loopback("10.0.0.1/8")


def test_cmd_args_are_immutable_like_a_frozen_dataclass() -> None:
    args = CmdArgs(command="ADD", container_id="c", netns="/n", ifname="eth0", args={},
                   path=["/bin"], stdin_data=b"{}")
    with pytest.raises(AttributeError):
        args.ifname = "eth1"
    same = CmdArgs(command="ADD", container_id="c", netns="/n", ifname="eth0", args={},
                   path=["/bin"], stdin_data=b"{}")
    assert args == same and args.args_raw == ""


def test_compact_output_of_the_c_encoder_equals_the_go_style_encoder() -> None:
    doc = {"html": "a<b>&c", "seps": "\u2028\u2029", "text": 'é\n"\\', "n": [1, -2.5, 1e100],
           "nested": {"k<": [None, True, False, {}, []]}, "tuple": (1, 2)}
    assert dumps_compact(doc) == dumps_compact_slow(doc)
    assert dumps_compact(doc).startswith('{"html":"a\\u003cb\\u003e\\u0026c",')


def test_compact_output_of_what_the_c_encoder_refuses_is_still_written() -> None:
    assert dumps_compact({1: "int key"}) == dumps_compact_slow({1: "int key"})
    with pytest.raises(TypeError):
        dumps_compact({"a": object()})


@pytest.mark.parametrize("text", ["10.1.2.3", "fd00::1", "::", "::1", "1::", "::ffff:10.1.2.3",
                                  "::10.1.2.3", "1:0:0:1:0:0:0:1", "1:0:0:0:1:0:0:0",
                                  "2001:db8:0:0:1:0:0:1", "FD00:0:0:0:0:0:0:2", "0:0:1::"])
def test_host_local_addresses_parse_and_print_as_ipaddress_does(text: str) -> None:
    ip = ipaddress.ip_address(text)
    mapped = getattr(ip, "ipv4_mapped", None)
    parsed = addr.parse_ip(text)
    assert (parsed.version, parsed.value) == ((4, int(mapped)) if mapped else
                                              (ip.version, int(ip)))
    assert str(parsed) == str(mapped or ip)


@pytest.mark.parametrize("text", ["010.1.2.3", "1.2.3", "1.2.3.256", "fe80::1%eth0", " ::1",
                                  "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "::1.02.3.4", "",
                                  "1.2.3.4\x00", "\uff11.2.3.4"])
def test_host_local_refuses_what_ipaddress_refuses(text: str) -> None:
    assert addr.try_parse_ip(text) is None
    with pytest.raises(addr.IPParseError):
        addr.parse_ip(text)


@pytest.mark.parametrize("text", ["0.0.0.0", "255.255.255.255", "10.0.0.1", "01.2.3.4", "1.2.3",
                                  "1.2.3.4.5", "256.1.1.1", "1..2.3", " 1.2.3.4", "1.2.3.4 ",
                                  "+1.2.3.4", "1.2.3.0x4", "\u0663.1.1.1", "1.2.3.4\x00", ""])
def test_ipv4_is_parsed_and_printed_as_inet_pton_and_inet_ntop_do(text: str) -> None:
    try:
        packed: bytes | None = socket.inet_pton(socket.AF_INET, text)
    except (OSError, ValueError):
        packed = None
    value = ipnet.parse_ipv4(text)
    assert value == (int.from_bytes(packed, "big") if packed is not None else None)
    if value is not None:
        assert ipnet.format_ipv4(value) == socket.inet_ntop(socket.AF_INET, packed or b"")
