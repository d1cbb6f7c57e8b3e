"""The Kubernetes API client over HTTPS (:class:`HttpKubeClient`): the only part of the
client that speaks HTTP, and so the only one importing aiohttp."""

from kubelet_sim.client.http.client import HttpKubeClient, HttpWatch, RestResource

__all__ = ["HttpKubeClient", "HttpWatch", "RestResource"]
