"""The node-driver-registrar role: the kubelet plugin-registration API, served beside a CSI driver.

Used by the driver (``--registration-dir``) and by the simulator for drivers it does not start;
it imports neither.
"""
