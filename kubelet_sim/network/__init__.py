"""Node networking: host-gw routes, the NetworkPolicy engine, Linux nodes."""
