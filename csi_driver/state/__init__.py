"""What survives a restart, without gRPC or protobuf.

The SQLite store, the data on disk, mounts and loop file systems.
"""
