"""The host path's queue programs (docs/design/host-path.md): `steps.py`, the step
vocabulary and the step table derived from the `hal` module's import declarations."""
