"""The CNI protocol, shared by the plugins and the runtime's libcni.

The role containernetworking/cni's pkg/types and pkg/version play: result types, version
parsing and conversion (0.1.0-1.1.0), the one error type and its codes, Go-compatible JSON,
the container-id / ifname / network-name rules and IP helpers. Standard library only, and
light: every CNI exec imports it.
"""
