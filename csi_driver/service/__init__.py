"""One thin servicer per CSI service.

Each RPC parses and validates its request, calls the domain and builds the response.
"""
