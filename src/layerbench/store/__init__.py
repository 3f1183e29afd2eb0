"""The results store: SQLite with a versioned schema, one transaction per finished trial, and the read model
and its columnar cache that everything above reads a run through."""
