"""The `cuda` device: IREE's `cuda-nvptx-fb` executables run through the CUDA driver."""
