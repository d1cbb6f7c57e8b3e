"""A simulated Kubernetes cluster that calls CSI over gRPC and CNI by exec, as Kubernetes does."""
