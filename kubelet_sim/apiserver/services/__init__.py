"""The Service kind's side of the API server, as kube-apiserver's service REST storage:
ClusterIP and NodePort allocation (:mod:`.ranges`, :mod:`.allocation`), defaulting,
validation and update rules (:mod:`.rules`), and the ``kubernetes`` Service the API server
keeps for itself (:mod:`.kubernetes_service`). The EndpointSlice and Endpoints kinds'
rules live in :mod:`.endpoint_rules`."""
