"""The CSI v1.12 plugin process: Identity, Controller, GroupController, SnapshotMetadata
and Node services over gRPC on a unix socket."""

__version__ = "0.1.0"
