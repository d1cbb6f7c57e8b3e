"""The wire formats of the Kubernetes API: JSON and protobuf, and the negotiation between
them, kept out of the REST handlers (they work on JSON objects whatever the client
speaks).

- :mod:`.negotiation`: Accept/Content-Type → the form of the body and of the answer;
- :mod:`.envelope`: the ``k8s\\x00`` + ``runtime.Unknown`` envelope and watch frames;
- :mod:`.protobuf`: JSON objects ↔ messages of k8s_protos, walking the descriptors;
- :mod:`.special`: Time, MicroTime, Duration, Quantity text forms.
"""

from kubelet_sim.apiserver.http.encoding.negotiation import (
    PROTOBUF,
    ObjectResponse,
    WatchStream,
    error_response,
    negotiate,
    read_body,
)

__all__ = ["PROTOBUF", "ObjectResponse", "WatchStream", "error_response", "negotiate",
           "read_body"]
