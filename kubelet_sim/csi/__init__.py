"""The CSI client side the kubelet and the sidecars share: the gRPC client and volume specs."""
