"""The algorithms written once against the engine protocol, one module per algorithm."""
