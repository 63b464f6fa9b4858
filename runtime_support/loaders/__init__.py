"""loaders runtime support."""
