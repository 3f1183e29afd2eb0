"""layerbench: what each layer of the container storage stack costs a real workload.

For notebooks: ``layerbench.open("layerbench.db").samples()`` is a pandas
DataFrame of every sample with its cell's configuration as columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from layerbench.api import Results, open

__all__ = ["Results", "__version__", "open"]


def __getattr__(name: str) -> Any:
    # The API pulls in pandas, scipy and the analysis; importing layerbench (every command, every
    # test, `python -m layerbench.cli --help`) should not pay for them until a notebook asks.
    if name in ("Results", "open"):
        from layerbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'layerbench' has no attribute {name!r}")
