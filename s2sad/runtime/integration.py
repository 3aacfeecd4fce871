"""Run-time helpers for ``scipy.integrate`` (rules in :mod:`s2sad.rules.scipy_more_rules`)."""
from __future__ import annotations

from typing import Any

import numpy as np


def simpson_weights(x: Any, dx: Any, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """The weights ``scipy.integrate.simpson(y, x=x, dx=dx, axis=axis)`` gives the entries of a
    ``y`` of ``shape`` (simpson of the unit vectors), laid out to broadcast against ``y``."""
    from scipy import integrate

    axis = axis % len(shape)
    n = shape[axis]
    if x is None:
        w = integrate.simpson(np.eye(n), dx=dx, axis=-1)
        return np.reshape(w, [n if a == axis else 1 for a in range(len(shape))])
    x = np.asarray(x)
    if x.ndim == 1:
        w = integrate.simpson(np.eye(n), x=x, axis=-1)
        return np.reshape(w, [n if a == axis else 1 for a in range(len(shape))])
    xm = np.moveaxis(np.broadcast_to(x, shape), axis, -1)[..., None, :]
    eye = np.broadcast_to(np.eye(n), (*xm.shape[:-2], n, n))
    return np.moveaxis(integrate.simpson(eye, x=np.broadcast_to(xm, eye.shape), axis=-1), -1, axis)
