"""pyree's benchmarks: `python -m bench` (see bench/cli.py and the README's bench section).

pyree against iree.runtime on the same vmfb, calls interleaved one by one in one process.
"""
