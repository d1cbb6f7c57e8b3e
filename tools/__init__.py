"""Build and install helpers the Makefile runs (kubectl, the real CSI sidecars)."""
