"""The CSI sidecars: external-provisioner, -attacher, -snapshotter, -resizer."""
