"""Python code generated from protos/ by `make protos` (never edited by hand)."""
