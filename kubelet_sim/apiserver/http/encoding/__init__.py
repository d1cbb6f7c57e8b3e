"""The wire formats of the Kubernetes API: JSON, YAML and protobuf, and the negotiation
between them, kept out of the REST handlers (they work on JSON objects whatever the
client speaks).

- :mod:`.negotiation`: Accept/Content-Type → the form of the body and of the answer
  (media type and ``as=`` transformation), answers and errors written in it;
- :mod:`.envelope`: the ``k8s\\x00`` + ``runtime.Unknown`` envelope and watch frames;
- :mod:`.protobuf`: JSON objects ↔ messages of k8s_protos, walking the descriptors;
- :mod:`.special`: Time, MicroTime, Duration, Quantity text forms.
"""

from kubelet_sim.apiserver.http.encoding.negotiation import (
    JSON,
    PATCH_TYPES,
    PROTOBUF,
    Output,
    WatchStream,
    error_response,
    negotiate,
    not_acceptable,
    output,
    read_body,
    respond,
    status_response,
)

__all__ = ["JSON", "PATCH_TYPES", "PROTOBUF", "Output", "WatchStream",
           "error_response", "negotiate", "not_acceptable", "output", "read_body", "respond",
           "status_response"]
