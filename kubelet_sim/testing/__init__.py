"""Fakes shipped for tests: a fake CSI driver and controller.

Production code never imports them (a contract in .importlinter says so).
"""
