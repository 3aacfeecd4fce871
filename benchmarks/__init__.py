"""Benchmarks of s2sad against a handwritten NumPy gradient and other AD systems.

Run ``python benchmarks/run.py --help``.  ``workloads.py`` holds the NumPy
functions (differentiated by s2sad) and their handwritten gradients; the
``impl_*.py`` modules hold the same workloads written for each peer system.
"""
