"""The container runtime (containerd's role) and its libcni."""
