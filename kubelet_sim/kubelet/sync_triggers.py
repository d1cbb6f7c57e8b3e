"""Why the kubelet synced a pod: what its loop records for each pod it starts, so a start
that only a periodic pass brought about (a lost wake-up) can be counted.

- ``event``: the pod's own watch event (also when it came while a worker was syncing
  the pod, and the pod was synced again once that worker finished);
- ``volume``: a change of what the waiting pod's volumes wait for (the node's
  ``volumesAttached``, a VolumeAttachment to the node);
- ``config``: a ConfigMap or Secret a pod waiting with CreateContainerConfigError names
  was created or changed;
- ``follow-up``: the sync right after one of the pod's own syncs that changed something
  (a waiting status written, say);
- ``resync``: the pass over every pod the loop makes every ``resync`` seconds;
- ``retry``: the re-sync every ``period`` of a pod that waits (a volume not attached yet,
  a sandbox backing off), as the kubelet polls for its volumes;
- ``settle``: a pass of ``Cluster.settle`` (tests, the demo), not of the loop.
"""

from __future__ import annotations

EVENT = "event"
FOLLOW_UP = "follow-up"
VOLUME = "volume"
CONFIG = "config"
RESYNC = "resync"
RETRY = "retry"
SETTLE = "settle"

PERIODIC = frozenset({RESYNC, RETRY})
