"""hal runtime support."""
