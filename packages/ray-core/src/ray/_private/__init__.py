"""Implementation of ray-core. Nothing here is public API; libraries must not import it."""
