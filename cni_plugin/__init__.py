"""CNI 1.1.0 plugin executables: bridge, host-local IPAM, loopback and a noop test plugin.

Executable names (never the reference plugins' names, so both can share a bin dir):

- ``emu-bridge``      (cni_plugin.bridge)     the reference bridge's config and behaviour
- ``emu-host-local``  (cni_plugin.host_local) host-local IPAM, store shared with the reference
- ``emu-loopback``    (cni_plugin.loopback)   brings lo up in the sandbox
- ``emu-noop``        (cni_plugin.noop)       test plugin driven by a debug file

They are console scripts of this package and can be laid into a CNI bin dir with
``python -m cni_plugin.install DIR`` (``make cni-bin DIR=...``). Network configs
choose ``"dataplane": "emulated"`` (recorded in ``dataplaneDir``, no root) or
``"linux"`` (real bridge, veth, addresses and routes); without the key each command
takes the one that fits its CNI_NETNS (cni_plugin.dataplane.choice).
"""
