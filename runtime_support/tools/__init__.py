"""The command-line tools `pyree-run` (run_cli.py, its flags in run_flags.py) and
`pyree-benchmark` (benchmark_cli.py), and the formats they read and write as
iree-run-module does: `--input` specs (io_specs.py, c_numbers.py, narrow_floats.py),
printed results and --output files (io_format.py), `--expected_output` (expected_output.py)
and the call trace (trace.py). Generated packages do not need this package."""
