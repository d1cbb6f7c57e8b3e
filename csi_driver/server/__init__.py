"""The gRPC server: endpoint, start-up and interceptors.

The interceptors hold the one error-to-status mapping, the logging and the in-flight guard.
"""
