"""vm runtime support."""
