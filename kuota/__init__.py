"""kuota — job-level queueing and quota manager for Kubernetes and Redis worker pools.

This package holds the edges: the command line, configuration, the simulator,
and the adapters that connect the pure core (``quota``, ``queueing``,
``admission``, ``placement``, ``multicluster``) to Kubernetes and Redis.
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # ``kuota.Client`` without importing redis for every CLI command.
    if name == "Client":
        from kuota.client import Client

        return Client
    raise AttributeError(f"module 'kuota' has no attribute {name!r}")
