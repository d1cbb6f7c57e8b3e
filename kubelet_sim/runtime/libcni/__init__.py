"""libcni: network configuration, result cache, plugin exec, results."""
