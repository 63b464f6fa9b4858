"""pyree's cache folder: content-addressed files trusted only when pyree wrote them
(disk_cache.py), and the packages `pyree-run` translates from a .vmfb into it
(package_cache.py)."""
