"""layerbench: what each layer of the container storage stack costs a real workload.

For notebooks: ``layerbench.open("layerbench.db").samples()`` is a pandas
DataFrame of every sample with its cell's configuration as columns. For programs:
``layerbench.start_run("quick").execute()`` runs an experiment, ``layerbench.resume_run(RUN)`` continues one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from layerbench.core.version import VERSION as __version__

if TYPE_CHECKING:
    from layerbench.api import Events, Places, Results, Run, open, resume_run, start_run

__all__ = ["Events", "Places", "Results", "Run", "__version__", "open", "resume_run", "start_run"]


def __getattr__(name: str) -> Any:
    # The API pulls in pandas, scipy and the analysis; importing layerbench (every command, every
    # test, `python -m layerbench.cli --help`) should not pay for them until a notebook asks.
    if name in __all__ and name != "__version__":
        from layerbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'layerbench' has no attribute {name!r}")
