"""CNI 1.1.0 plugin executables: bridge, host-local IPAM, loopback and a noop test plugin."""
