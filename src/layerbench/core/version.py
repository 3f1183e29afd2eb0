"""layerbench's version, below every layer that records it (a run's host description, the HTML report)."""

VERSION = "0.1.0"
