"""The files of the volumes the kubelet writes itself (configMap, secret, downwardAPI and
the sources of a projected volume), as the kubelet's volume plugins compute them
(``MakePayload``, ``CollectData``) — pure functions of the pod and the objects it names.

- configMap: a file per key of ``data`` and ``binaryData``, or per entry of ``items``
  (``key``, ``path``, ``mode``); a key ``items`` names that the object lacks fails with
  "configmap references non-existent config key: K" unless the source is optional.
- secret: the same over ``data`` (base64 on the wire), "references non-existent secret
  key: K".
- downwardAPI: ``fieldRef`` (metadata.name, namespace, uid, labels, annotations, and one
  label or annotation as ``metadata.labels['k']``), maps written ``k="v"`` a line in key
  order (Go's ``%q``); ``resourceFieldRef`` a container's limits or requests (cpu,
  memory, ephemeral-storage) divided by ``divisor`` (default 1) and rounded up, limits
  that are not set being the node's allocatable. Every failing item is reported, as one
  error, or ``[e1, e2]`` for several (an aggregate).

Modes: an item's ``mode`` or the source's ``defaultMode`` (0644 when absent).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping
from typing import Any

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import Quantity, QuantityError
from kubelet_sim.kubelet.atomic_writer import FileProjection, Payload

DEFAULT_MODE = 0o644


class PayloadError(Exception):
    """A volume's files cannot be made; the message is the kubelet's."""


def aggregate(errors: list[str]) -> str:
    """k8s.io/apimachinery's aggregate error text."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def mode_of(item: Mapping[str, Any], default_mode: int) -> int:
    mode = item.get("mode")
    return int(mode) if mode is not None else default_mode


def default_mode_of(source: Mapping[str, Any]) -> int:
    mode = source.get("defaultMode")
    return int(mode) if mode is not None else DEFAULT_MODE


# -- configMap and secret ------------------------------------------------------------


def config_map_payload(items: list[JSON], config_map: Resource | None, default_mode: int,
                       optional: bool) -> Payload:
    """The files of a configMap source (``config_map`` None: an optional one missing)."""
    body = config_map.body if config_map is not None else {}
    data: dict[str, bytes] = {k: str(v).encode() for k, v in (body.get("data") or {}).items()}
    for key, value in (body.get("binaryData") or {}).items():
        data.setdefault(key, base64.b64decode(value))
    return _key_payload(items, data, default_mode, optional,
                        "configmap references non-existent config key: {}")


def secret_payload(items: list[JSON], secret: Resource | None, default_mode: int,
                   optional: bool) -> Payload:
    """The files of a secret source (``secret`` None: an optional one missing)."""
    body = secret.body if secret is not None else {}
    data = {k: base64.b64decode(v) for k, v in (body.get("data") or {}).items()}
    return _key_payload(items, data, default_mode, optional,
                        "references non-existent secret key: {}")


def _key_payload(items: list[JSON], data: dict[str, bytes], default_mode: int,
                 optional: bool, missing: str) -> Payload:
    if not items:
        return {key: FileProjection(value, default_mode) for key, value in data.items()}
    payload: Payload = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if optional:
                continue
            raise PayloadError(missing.format(key))
        payload[str(item.get("path", ""))] = FileProjection(data[key],
                                                            mode_of(item, default_mode))
    return payload


# -- downwardAPI -----------------------------------------------------------------------

_SUBSCRIPT = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$")


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (strconv.Quote): printable characters kept, the rest
    escaped."""
    out = ['"']
    simple = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
              "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    for char in text:
        if char in simple:
            out.append(simple[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def format_map(values: Mapping[str, str]) -> str:
    """Labels or annotations as the downward API writes them: ``k="v"`` per line, sorted."""
    return "\n".join(f"{key}={go_quote(str(values[key]))}" for key in sorted(values))


def field_value(pod: Resource, field_path: str) -> str:
    meta = pod.metadata
    subscript = _SUBSCRIPT.match(field_path)
    if subscript:
        values = meta.labels if subscript.group(1) == "metadata.labels" else meta.annotations
        return str((values or {}).get(subscript.group(2), ""))
    if field_path == "metadata.labels":
        return format_map(meta.labels or {})
    if field_path == "metadata.annotations":
        return format_map(meta.annotations or {})
    if field_path == "metadata.name":
        return pod.name
    if field_path == "metadata.namespace":
        return pod.namespace
    if field_path == "metadata.uid":
        return meta.uid
    raise PayloadError(f"unsupported fieldPath: {field_path}")


_RESOURCES = {"cpu", "memory", "ephemeral-storage"}


def resource_value(ref: Mapping[str, Any], pod: Resource, allocatable: Mapping[str, Any]) -> str:
    """A container's limit or request as the downward API writes it."""
    container_name = str(ref.get("containerName", ""))
    containers = [*(pod.spec.get("initContainers") or []), *(pod.spec.get("containers") or [])]
    container = next((c for c in containers if c.get("name") == container_name), None)
    if container is None:
        raise PayloadError(f"container {container_name} not found")
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in _RESOURCES:
        raise PayloadError(f"unsupported container resource : {resource}")
    resources = container.get("resources") or {}
    values = dict(resources.get(kind) or {})
    if kind == "limits":  # a limit not set is the node's allocatable
        for key in _RESOURCES:
            if key not in values and key in allocatable:
                values[key] = allocatable[key]
    try:
        amount = Quantity.parse(values.get(name, "0")).amount
        divisor = Quantity.parse(ref.get("divisor") or "1").amount
    except QuantityError as err:
        raise PayloadError(str(err)) from None
    if divisor.is_zero():
        divisor = Quantity.parse("1").amount
    if name == "cpu":  # in millicores, as the kubelet divides
        whole = math.ceil(math.ceil(amount * 1000) / math.ceil(divisor * 1000))
    else:
        whole = math.ceil(math.ceil(amount) / math.ceil(divisor))
    return str(whole)


def downward_api_payload(items: list[JSON], pod: Resource, allocatable: Mapping[str, Any],
                         default_mode: int) -> Payload:
    payload: Payload = {}
    errors: list[str] = []
    for item in items:
        path = str(item.get("path", ""))
        try:
            if item.get("fieldRef"):
                text = field_value(pod, str(item["fieldRef"].get("fieldPath", "")))
            elif item.get("resourceFieldRef"):
                text = resource_value(item["resourceFieldRef"], pod, allocatable)
            else:
                text = ""
        except PayloadError as err:
            errors.append(str(err))
            continue
        payload[path] = FileProjection(text.encode(), mode_of(item, default_mode))
    if errors:
        raise PayloadError(aggregate(errors))
    return payload
