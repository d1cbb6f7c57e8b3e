"""The CSI v1.12 plugin process: Identity, Controller, GroupController, SnapshotMetadata and Node over gRPC on a unix socket."""
