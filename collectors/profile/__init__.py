"""Profiling on the GPU node: nsys (binary lookup, the profile and export commands), the PyTorch
profiler pass, NVTX marks, and the watchdog every profile pass runs under. Standard library and
torch only; the benchmarks (collectors/bench/) and `collect command --nsys` call these."""
