"""layerbench: what each layer of the container storage stack costs a real workload."""

__version__ = "0.1.0"
