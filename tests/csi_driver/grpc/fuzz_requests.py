"""Hypothesis strategies for CSI requests.

``request(descriptor, vocab)`` fills any request message field by field from its
descriptor, so every RPC's every field is covered without a hand-written template.
Fields are chosen by name: ids, paths, names, page tokens, maps and capabilities each
mix values a CO would send (the seeds' ids, the example's own target and staging paths)
with the adversarial ones issue 8 lists.  In each message up to two fields take an
adversarial value and one may be left out; Hypothesis shrinks towards none, and towards
the first (valid-looking) choice of each ``one_of``, so a minimal failing example keeps
only what the failure needs.

``raw_body`` makes request bodies as bytes: random bytes, a valid body cut short or with
a byte flipped, and a string field holding invalid UTF-8.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

from csi_protos import csi_pb2

EPHEMERAL_KEY = "csi.storage.k8s.io/ephemeral"
EX = "{ex}"  # the current example's dir, in paths
AccessMode = csi_pb2.VolumeCapability.AccessMode
INT32 = (0, 1, 2, -1, 2**31 - 1, -(2**31))
INT64 = (0, 1, 4096, 1 << 20, 1 << 30, 1 << 40, (1 << 40) + 1, -1, 2**63 - 1, -(2**63))
TOKENS = ("", "p0", "p1", "p2", "p", "p²", "p" + "1" * 30, "p-1", "invalid-token", "p 1",
          "p1\x00", "p٣", "P1", "p" + "9" * 19)
BIG_MAP = {f"k{i}": "v" * 100 for i in range(45)}  # > 4 KiB
ID_KINDS = {
    "volume_id": "volume", "source_volume_id": "volume", "source_volume_ids": "volume",
    "snapshot_id": "snapshot", "snapshot_ids": "snapshot", "base_snapshot_id": "snapshot",
    "target_snapshot_id": "snapshot", "group_snapshot_id": "group",
}
PATH_FIELDS = frozenset({"target_path", "staging_target_path", "volume_path"})
_T = FieldDescriptor


def adversarial_ids(canary_dir: str) -> tuple[str, ...]:
    """Ids that would name a path if the driver used them as file names (the relative
    ones stay inside the sandbox: <sandbox>/state/volumes/../../x is <sandbox>/x)."""
    return ("..", ".", "../../x", "../snapshots", canary_dir, "", "a/b", "a//b", "a\x00b",
            "\x00", "v" * 129, "é" * 65, "日本語", "a b", " ", "a\nb", "\\040", "-", "*")


def is_path_like(value: str) -> bool:
    """An id that is not a plain file name: "/" in it, ".", "..", empty, or a NUL."""
    return "/" in value or value in ("", ".", "..") or "\x00" in value


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """What the strategies choose from.  Paths under the example's own dir are written
    ``{ex}/…`` and resolved when the request is sent, so one vocabulary (and the
    strategies built from it) serves every example until the seeds change."""

    ids: dict[str, tuple[str, ...]]  # kind → ids the driver handed out (the seeds)
    names: tuple[str, ...]  # the seeds' names (a retried create)
    node_id: str
    topology: dict[str, str]
    contexts: tuple[dict[str, str], ...]  # the seeds' volume_context
    paths: tuple[str, ...]  # targets and staging paths a CO would send
    bad_paths: tuple[str, ...]
    bad_ids: tuple[str, ...]


def _text(max_size: int = 12) -> st.SearchStrategy[str]:
    """Random text without "/": only the curated adversarial ids name paths."""
    return st.text(st.characters(codec="utf-8", exclude_characters="/"), max_size=max_size)


def _small_map() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(_text(8), _text(8), max_size=3)


class Choice(NamedTuple):
    """A field's values a CO would send, and its adversarial ones."""

    valid: st.SearchStrategy[Any]
    adversarial: st.SearchStrategy[Any]


def ids(vocab: Vocabulary, kind: str) -> Choice:
    every = tuple(i for group in vocab.ids.values() for i in group)
    own = vocab.ids.get(kind) or every or ("none",)
    fresh = st.uuids().map(str)
    valid = st.one_of(st.sampled_from(own), fresh) if kind == "volume" else st.sampled_from(own)
    curated = st.sampled_from(vocab.bad_ids)
    adversarial = st.one_of(curated, curated, st.sampled_from(every or own), fresh, _text())
    return Choice(valid, adversarial)


def paths(vocab: Vocabulary) -> Choice:
    return Choice(st.sampled_from(vocab.paths), st.sampled_from(vocab.bad_paths))


def names(vocab: Vocabulary) -> Choice:
    fresh = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
    return Choice(st.one_of(fresh.map(lambda s: "fz-" + s), st.sampled_from(vocab.names)),
                  st.one_of(st.sampled_from(vocab.bad_ids), _text(),
                            st.sampled_from(("n" * 128, "n" * 129, "é" * 64, "é" * 65))))


def maps(name: str, vocab: Vocabulary) -> Choice:
    common = [_small_map(), _small_map(), _small_map(), st.just(BIG_MAP)]
    if name == "volume_context":
        ephemeral = st.fixed_dictionaries(
            {EPHEMERAL_KEY: st.sampled_from(("true", "false", "TRUE", ""))},
            optional={"csi.storage.k8s.io/pod.name": _text(8),
                      "size": st.sampled_from(("1Mi", "-1", "1Pi", "x"))})
        valid = [st.just({}), st.just({EPHEMERAL_KEY: "true"})]
        if vocab.contexts:
            valid.append(st.sampled_from(vocab.contexts))
        return Choice(st.one_of(valid), st.one_of(ephemeral, *common))
    if name == "parameters":
        return Choice(st.sampled_from(({}, {"pool": "default"})), st.one_of(
            st.sampled_from(vocab.bad_ids).map(lambda p: {"pool": p}),
            st.just({"csi-mini.example.com/ephemeral": "true"}), *common))
    if name == "mutable_parameters":
        return Choice(st.sampled_from(({}, {"iops": "5000"})), st.one_of(
            st.sampled_from(("0", "-1", "", "x", "1" * 40)).map(lambda v: {"iops": v}),
            *common))
    if name == "segments":
        key = next(iter(vocab.topology), "k")
        return Choice(st.just(vocab.topology),
                      st.one_of(st.just({}), st.sampled_from(vocab.bad_ids).map(
                          lambda v: {key: v}), *common))
    return Choice(st.just({}), st.one_of(*common))


def capability(vocab: Vocabulary) -> Choice:
    modes = st.sampled_from([m for m in AccessMode.Mode.values() if m != AccessMode.UNKNOWN])

    def build(block: bool, mode: int, fs_type: str) -> csi_pb2.VolumeCapability:
        cap = csi_pb2.VolumeCapability(access_mode=AccessMode(mode=mode))  # type: ignore[arg-type]
        if block:
            cap.block.SetInParent()
        else:
            cap.mount.fs_type = fs_type
        return cap

    return Choice(st.builds(build, st.booleans(), modes, st.sampled_from(("", "ext4"))),
                  message(cast(Descriptor, csi_pb2.VolumeCapability.DESCRIPTOR), vocab, depth=2))


def _integers(fd: FieldDescriptor) -> Choice:
    if fd.name in ("required_bytes", "limit_bytes"):
        valid: st.SearchStrategy[int] = st.sampled_from((0, 1 << 20, 1 << 30))
    elif fd.name == "starting_offset":
        valid = st.sampled_from((0, 4096))
    else:
        valid = st.integers(0, 3)
    if fd.type in (_T.TYPE_INT32, _T.TYPE_SINT32, _T.TYPE_SFIXED32):
        return Choice(valid, st.one_of(st.sampled_from(INT32), st.integers(-10, 1000)))
    return Choice(valid, st.one_of(st.sampled_from(INT64), st.integers(-1, 1 << 41)))


def _scalar(fd: FieldDescriptor, vocab: Vocabulary) -> Choice:
    name = fd.name
    if fd.type == _T.TYPE_STRING:
        if name in ID_KINDS:
            return ids(vocab, ID_KINDS[name])
        if name in PATH_FIELDS:
            return paths(vocab)
        if name == "node_id":
            return Choice(st.just(vocab.node_id), st.one_of(st.sampled_from(vocab.bad_ids),
                                                            _text()))
        if name == "name":
            return names(vocab)
        if name == "starting_token":
            bad = st.sampled_from(TOKENS[4:])
            return Choice(st.sampled_from(TOKENS[:4]), st.one_of(bad, bad, _text()))
        if name == "fs_type":
            return Choice(st.sampled_from(("", "ext4")),
                          st.one_of(st.sampled_from(("xfs", "../x")), _text()))
        return Choice(st.sampled_from(("", "a")), _text())
    if fd.type == _T.TYPE_BOOL:
        return Choice(st.booleans(), st.booleans())
    if fd.type == _T.TYPE_ENUM:
        assert fd.enum_type is not None
        known = [v.number for v in fd.enum_type.values]
        return Choice(st.sampled_from(known), st.integers(-2, 100))
    if fd.type == _T.TYPE_BYTES:
        return Choice(st.just(b""), st.binary(max_size=16))
    return _integers(fd)


def field_choice(fd: FieldDescriptor, vocab: Vocabulary, depth: int = 0) -> Choice:
    mt = fd.message_type
    if mt is not None and mt.GetOptions().map_entry:
        return maps(fd.name, vocab)
    if mt is not None and mt.full_name == "csi.v1.VolumeCapability":
        one = capability(vocab)
    elif mt is not None:
        sub = message(mt, vocab, depth + 1)
        one = Choice(sub, sub)
    else:
        one = _scalar(fd, vocab)
    if fd.is_repeated:
        return Choice(st.lists(one.valid, min_size=1, max_size=2),
                      st.lists(st.one_of(one.adversarial, one.valid), max_size=3))
    return one


def message(descriptor: Descriptor, vocab: Vocabulary, depth: int = 0,
            valid: bool = False) -> st.SearchStrategy[Message]:
    """Messages of ``descriptor`` whose fields hold valid values, but for up to two
    fields drawn from their adversarial values and up to one left out.  Hypothesis
    shrinks both sets towards empty: a minimal example is valid but for its culprits.
    ``valid``: every field, every time, from its valid values.
    (The field strategies are built here once, not at every draw.)"""
    cls = message_factory.GetMessageClass(descriptor)
    if depth > 3:
        return st.builds(cls)
    choices = {fd.name: field_choice(fd, vocab, depth) for fd in descriptor.fields}
    oneofs = {o.name: st.sampled_from([*[f.name for f in o.fields], None])
              for o in descriptor.oneofs}
    plans: dict[tuple[str, ...], tuple[st.SearchStrategy[set[str]], ...]] = {}
    for members in itertools.product(*[[*o.fields, None] for o in descriptor.oneofs]):
        names = tuple(f.name for f in descriptor.fields
                      if f.containing_oneof is None or f in members)
        if names:
            plans[names] = (st.sets(st.sampled_from(names), max_size=0 if valid else 2),
                            st.sets(st.sampled_from(names), max_size=0 if valid else 1))

    @st.composite
    def draw_message(draw: st.DrawFn) -> Message:
        msg = cls()
        chosen = {name: draw(members) for name, members in oneofs.items()}
        fields = [f for f in descriptor.fields
                  if f.containing_oneof is None or chosen[f.containing_oneof.name] == f.name]
        if not fields:
            return msg
        adversarial_sets, absent_sets = plans[tuple(f.name for f in fields)]
        adversarial = draw(adversarial_sets)
        absent = draw(absent_sets)
        for fd in fields:
            if fd.name in absent:
                continue
            choice = choices[fd.name]
            _set(msg, fd, draw(choice.adversarial if fd.name in adversarial else choice.valid))
        return msg

    return draw_message()


@st.composite
def either(draw: st.DrawFn, choice: Choice) -> Any:
    """A valid value (8 in 10) or an adversarial one; shrinks towards valid."""
    return draw(choice.valid if draw(st.integers(0, 9)) < 8 else choice.adversarial)


def _set(msg: Message, fd: FieldDescriptor, value: Any) -> None:
    mt = fd.message_type
    target = getattr(msg, fd.name)
    if mt is not None and mt.GetOptions().map_entry:
        target.update(value)
    elif mt is not None and fd.is_repeated:
        for item in value:
            target.add().CopyFrom(item)
    elif mt is not None:
        target.CopyFrom(value)
        target.SetInParent()
    elif fd.is_repeated:
        target.extend(value)
    else:
        setattr(msg, fd.name, value)


def request(descriptor: Descriptor, vocab: Vocabulary,
            valid: bool = False) -> st.SearchStrategy[Message]:
    return message(descriptor, vocab, valid=valid)


# -- raw bodies ----------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def invalid_utf8_string(descriptor: Descriptor) -> st.SearchStrategy[bytes]:
    """A body whose one string field holds bytes that are not UTF-8."""
    strings = [f for f in descriptor.fields if f.type == _T.TYPE_STRING]
    if not strings:
        return st.nothing()
    bad = st.sampled_from((b"\xff", b"\xc3\x28", b"a\xed\xa0\x80b", b"\xf8\x88\x80\x80\x80"))

    def body(fd: FieldDescriptor, payload: bytes) -> bytes:
        return _varint(fd.number << 3 | 2) + _varint(len(payload)) + payload

    return st.builds(body, st.sampled_from(strings), bad)


def damaged(descriptor: Descriptor, vocab: Vocabulary) -> st.SearchStrategy[bytes]:
    """A valid body cut short, with one byte changed, or with bytes appended."""
    bodies = request(descriptor, vocab).map(lambda m: m.SerializeToString())

    @st.composite
    def damage(draw: st.DrawFn) -> bytes:
        body = draw(bodies)
        how = draw(st.sampled_from(("cut", "flip", "append")))
        if how == "cut" and body:
            return body[:draw(st.integers(0, len(body) - 1))]
        if how == "flip" and body:
            i = draw(st.integers(0, len(body) - 1))
            return body[:i] + bytes([body[i] ^ draw(st.integers(1, 255))]) + body[i + 1:]
        return body + draw(st.binary(min_size=1, max_size=8))

    return damage()


def raw_body(descriptor: Descriptor, vocab: Vocabulary) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=48), damaged(descriptor, vocab),
                     invalid_utf8_string(descriptor))
