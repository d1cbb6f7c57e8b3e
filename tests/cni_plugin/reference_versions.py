"""Which cniVersion to ask the reference plugins for, and how their answer reads at a
version they do not know: the differential tests compare every version.

Debian's reference plugins (containernetworking-plugins 1.1.1) are built against the
CNI 1.0 library: they refuse 1.1.0 ("incompatible CNI versions"). The result types did
not change from 1.0.0 to 1.1.0 (containernetworking/cni pkg/types/100), and plugins
built against the library that knows 1.1.0 leave an empty "dns" out. So where the
installed reference does not know a version, ours is compared with the reference's
answer at its newest version, relabelled as such a plugin prints it.
"""

from __future__ import annotations

import functools
import json
import subprocess
from typing import Any

from cni_spec.version import ALL_VERSIONS, DEFAULT_CONFIG_VERSION

__all__ = ["ALL_VERSIONS", "as_printed_at", "reference_version_for", "supported_by"]


@functools.cache
def supported_by(plugin: str) -> tuple[str, ...]:
    """The plugin's VERSION answer."""
    out = subprocess.run([plugin], env={"CNI_COMMAND": "VERSION"}, input=b"",
                         capture_output=True, check=True).stdout
    return tuple(json.loads(out)["supportedVersions"])


def reference_version_for(plugin: str, version: str) -> str:
    """`version` if the reference knows it, else its newest."""
    supported = supported_by(plugin)
    return version if version in supported or version == "" else supported[-1]


def as_printed_at(body: Any, version: str) -> Any:
    """A reference answer (result or error, parsed) given at the version
    reference_version_for chose, as a plugin built for `version` prints it: the same
    types, labelled with `version`; from 1.1.0 on without an empty "dns". Unchanged when
    the reference answered at `version` itself ("" is a config without cniVersion)."""
    version = version or DEFAULT_CONFIG_VERSION
    if not isinstance(body, dict) or body.get("cniVersion", version) == version:
        return body  # already at `version`, or an error (the reference prints no version)
    out = {**body, "cniVersion": version}
    if version == "1.1.0" and out.get("dns") == {}:
        del out["dns"]
    return out
