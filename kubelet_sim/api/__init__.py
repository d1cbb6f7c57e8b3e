"""The object model: kinds, builders, quantities, selectors and API errors."""
