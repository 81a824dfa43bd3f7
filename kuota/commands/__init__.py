"""One module per ``kuota`` sub-command; each exposes ``register(subparsers)``."""
