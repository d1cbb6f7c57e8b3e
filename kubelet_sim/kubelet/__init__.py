"""The kubelet: pod sync, plugin watcher and registration, volume manager, pod volumes, paths."""
