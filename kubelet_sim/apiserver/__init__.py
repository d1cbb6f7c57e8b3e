"""The API server: storage with resourceVersions, watch, defaulting, validation, update rules."""
