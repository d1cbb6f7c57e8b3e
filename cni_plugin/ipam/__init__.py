"""host-local IPAM core: ranges, the round-robin allocator, the lease stores, GC.

Pure of CNI plumbing (no env, no stdout): ``cni_plugin.host_local`` is the
plugin that hands these to the skel. Modules are imported directly (nothing is
re-exported here) to keep the exec path's imports to what a command needs.
"""
