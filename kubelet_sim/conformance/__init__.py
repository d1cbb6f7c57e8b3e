"""``kubelet-sim conformance``: run what Kubernetes expects of a CNI plugin (and, later, a
CSI driver) through the whole lifecycle, the way the runtime and the kubelet call it,
and report each case (a table, JUnit XML, the exit status)."""
