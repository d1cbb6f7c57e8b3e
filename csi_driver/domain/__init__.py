"""What the driver does, without gRPC or protobuf.

Volumes, snapshots, attachments, node volumes, access modes, topology, capabilities.
"""
