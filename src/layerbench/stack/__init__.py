"""A stack, built and torn down layer by layer: device, filesystem, engine, placement and limits, every
resource recorded in the ledger before it exists. Each engine is a package or module of engines/."""
