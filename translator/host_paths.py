"""How a translated module's host code issues its queue calls (issue #25,
docs/design/host-path.md): `programs`, every queue region as a queue program run by
runtime_support/exec (the default); `fused`, the older per-shape fused helpers, kept
until they are removed. Light on imports: the CLI reads it before anything is translated."""

HOST_PATHS = ("programs", "fused")
DEFAULT_HOST_PATH = "programs"
