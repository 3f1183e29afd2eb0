"""How a run is shown: one exporter per format (terminal, Markdown, HTML with figures, CSV, JSON, Parquet,
OpenMetrics, JUnit), each rendered from the same view of the run."""
