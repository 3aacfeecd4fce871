"""Generated gradients on PyTorch tensors and JAX arrays, through ``array-api-compat``.

NumPy's functions hand Dask and CuPy arrays to their library (``__array_function__``); PyTorch
tensors and JAX arrays implement the Array API instead.  For a call with such arrays, the
specialising dispatcher (s2sad.specializing) runs the same generated code rebound to the
library (:func:`on_library`): ``np`` is a :class:`Namespace` that spells NumPy's functions with
the library's, and the run-time helpers are namespace-generic variants that make new arrays
of the library (no ``out=``, no stand-ins, no ``np.asarray``).  The decision is made once per
call signature; NumPy calls never reach this package.
"""
from __future__ import annotations

from .namespace import Namespace, UnmappedFunctionError
from .rebind import library_of, on_library

__all__ = ["Namespace", "UnmappedFunctionError", "library_of", "on_library"]
