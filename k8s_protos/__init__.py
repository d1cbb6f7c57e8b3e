"""Python code generated from the Kubernetes schema in protos/k8s.io/ by `make protos`
(never edited by hand; the module names are flat, see generate.py)."""
