"""The Kubernetes API over HTTPS, in front of the simulated API server.

kubectl, client-go and the official Python client talk to it as to a real cluster:
discovery, the REST verbs with Kubernetes' query parameters and content types, watch
streams, Table output for ``kubectl get``, and errors as ``Status`` objects. Use::

    handle = start_api_server(api, state_dir=Path("/tmp/ksim"))
    print(handle.kubeconfig)   # server URL, CA and bearer token, mode 0600
    ...
    handle.stop()

The server runs on its own thread and event loop (the core is thread-safe), listens on
127.0.0.1 only, and answers 401 to any request without the token.
"""

from kubelet_sim.apiserver.http.server import ApiServerHandle, start_api_server

__all__ = ["ApiServerHandle", "start_api_server"]
