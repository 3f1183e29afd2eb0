"""layerbench: what each layer of the container storage stack costs a real workload.

For notebooks: ``layerbench.open("layerbench.db").samples()`` is a pandas
DataFrame of every sample with its cell's configuration as columns.
"""

__version__ = "0.1.0"

from layerbench.api import Results, open

__all__ = ["Results", "__version__", "open"]
