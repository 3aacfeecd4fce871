"""Gradient rules for SciPy, continued: ``scipy.fft``, ``scipy.integrate``, ``scipy.ndimage``,
``scipy.linalg.lstsq`` and ``qr`` (as NumPy's).

Imported by :mod:`s2sad.rules.scipy_rules` (so loaded with it, once SciPy is imported).
``scipy.fft``'s FFTs are ``np.fft``'s (the same helpers differentiate them); their
``workers`` and ``plan`` choose how they run, and ``overwrite_x=True`` is refused (gradients
read the input).  The DCTs are real-linear: each one's adjoint is its transpose
(``dct_grad``).
"""
from __future__ import annotations

from scipy import fft, integrate, linalg, ndimage

from .complex_rules import transform
from .numpy_more_rules import lstsq_rule
from .registry import REGISTRY, USER_OBJECTS

defvjp = REGISTRY.defvjp

_OVERWRITE = {"overwrite_x": "SciPy may write over the input in place, where gradients read it; leave "
                             "overwrite_x=False"}
_HOW = "overwrite_x=False, workers=None, *, plan=None"
_ONE = "n, (axis,)"  # a 1-d FFT as an n-d one: its n for s, its axis for axes
_RUN = {"workers": None, "plan": None, "unsupported": _OVERWRITE}


def _fft(fun, params: str, result: str, template: str) -> None:
    transform(fun, f"x, {params}, norm=None, {_HOW}", result, name=f"scipy.fft.{fun.__name__}", x=template, **_RUN)


# --- scipy.fft ---------------------------------------------------------------------------------
for fun, inverse in ((fft.fft, False), (fft.ifft, True)):
    _fft(fun, "n=None, axis=-1", "complex", f"fftn_grad(g, x, {_ONE}, norm, {inverse})")
for fun, inverse in ((fft.fft2, False), (fft.ifft2, True)):
    _fft(fun, "s=None, axes=(-2, -1)", "complex", f"fftn_grad(g, x, s, axes, norm, {inverse})")
for fun, inverse in ((fft.fftn, False), (fft.ifftn, True)):
    _fft(fun, "s=None, axes=None", "complex", f"fftn_grad(g, x, s, axes, norm, {inverse})")
_fft(fft.rfft, "n=None, axis=-1", "complex", f"rfftn_grad(g, x, {_ONE}, norm)")
_fft(fft.irfft, "n=None, axis=-1", "real", f"irfftn_grad(g, x, {_ONE}, norm)")
_fft(fft.rfft2, "s=None, axes=(-2, -1)", "complex", "rfftn_grad(g, x, s, axes, norm)")
_fft(fft.irfft2, "s=None, axes=(-2, -1)", "real", "irfftn_grad(g, x, s, axes, norm)")
_fft(fft.rfftn, "s=None, axes=None", "complex", "rfftn_grad(g, x, s, axes, norm)")
_fft(fft.irfftn, "s=None, axes=None", "real", "irfftn_grad(g, x, s, axes, norm)")
_fft(fft.hfft, "n=None, axis=-1", "real", "hfft_grad(g, x, n, axis, norm)")
_fft(fft.ihfft, "n=None, axis=-1", "complex", "ihfft_grad(g, x, n, axis, norm)")
transform(fft.fftshift, "x, axes=None", None, name="scipy.fft.fftshift", x="np.fft.ifftshift(g, axes)")
transform(fft.ifftshift, "x, axes=None", None, name="scipy.fft.ifftshift", x="np.fft.fftshift(g, axes)")
REGISTRY.declare_nondifferentiable(fft.fftfreq, fft.rfftfreq, fft.next_fast_len)

# the DCTs of every type and norm (orthogonalize: as the norm says), their adjoint the transpose
_DCT = "x, type=2, {}, norm=None, overwrite_x=False, workers=None, orthogonalize=None"
_ORTHOGONALIZE = {"orthogonalize": "s2sad differentiates the DCT with orthogonalize as its norm implies only; "
                                   "leave orthogonalize out"}
for fun, inverse, shape in ((fft.dct, False, "n=None, axis=-1"), (fft.idct, True, "n=None, axis=-1"),
                            (fft.dctn, False, "s=None, axes=None"), (fft.idctn, True, "s=None, axes=None")):
    lengths = "n, (axis,)" if "axis" in shape else "s, axes"
    transform(fun, _DCT.format(shape), None, name=f"scipy.fft.{fun.__name__}", workers=None, type=None,
              **{p.split("=")[0]: None for p in shape.split(", ")}, unsupported={**_OVERWRITE, **_ORTHOGONALIZE},
              x=f"dct_grad(g, x, type, {lengths}, norm, {inverse})")

# --- scipy.integrate ---------------------------------------------------------------------------
# cumulative_trapezoid along the last axis (``axis`` moved there): out_k = sum_{i <= k} h_i s_i / 2,
# h = dx or diff(x), s_i = y_i + y_{i+1} (after a 0 if initial=0).  G, the cotangent summed from
# the end, weighs each interval: y gets G h / 2 from both its intervals, h gets G s / 2.
_XM = "(np.moveaxis(x, axis, -1) if np.ndim(x) > 1 else x)"
_H = f"(dx if isinstance(x, type(None)) else np.diff({_XM}, axis=-1))"
_GM = "np.moveaxis(g, axis, -1)"
_G = (f"np.flip(np.cumsum(np.flip({_GM} if isinstance(initial, type(None)) else {_GM}[..., 1:], -1), axis=-1), -1)")
_SUMS = "(np.moveaxis(y, axis, -1)[..., :-1] + np.moveaxis(y, axis, -1)[..., 1:])"
_TWO_SIDES = "(np.concatenate([{c}, np.zeros_like({c}[..., :1])], axis=-1) + " \
             "np.concatenate([np.zeros_like({c}[..., :1]), {c}], axis=-1))"
_CY = f"(0.5 * {_G} * {_H})"
_CH = f"(0.5 * {_G} * {_SUMS})"
_CX = (f"(np.concatenate([np.zeros_like({_CH}[..., :1]), {_CH}], axis=-1) - "
       f"np.concatenate([{_CH}, np.zeros_like({_CH}[..., :1])], axis=-1))")
_CUMTRAPZ_T = "np.cumsum({h} * {s}, axis=-1)"
_INITIAL = ("np.moveaxis({c} if isinstance(initial, type(None)) else "
            "np.concatenate([np.zeros_like({c}[..., :1]), {c}], axis=-1), -1, axis)")
_TM = "(np.moveaxis(t, axis, -1) if np.ndim(t) > 1 else t)"
USER_OBJECTS.update(cumulative_trapezoid=integrate.cumulative_trapezoid, simpson=integrate.simpson)
defvjp(integrate.cumulative_trapezoid, "y, x=None, dx=1.0, axis=-1, initial=None", axis=None, initial=None,
       name="scipy.integrate.cumulative_trapezoid",
       jvp={"y": "cumulative_trapezoid(t, x, dx, axis, initial)",
            "dx": "t * cumulative_trapezoid(y, axis=axis, initial=initial)",
            "x": _INITIAL.format(c=_CUMTRAPZ_T.format(h=f"np.diff({_TM}, axis=-1)", s=f"0.5 * {_SUMS}"))},
       y=f"unbroadcast(np.moveaxis({_TWO_SIDES.format(c=_CY)}, -1, axis), y)",
       dx=f"unbroadcast(np.sum({_CH}), dx)",
       x=f"np.moveaxis({_CX}, -1, axis) if np.ndim(x) > 1 else np.sum(np.reshape({_CX}, (-1, np.shape(x)[0])), axis=0)")
# simpson is linear in y, with weights that depend on x (simpson_weights: simpson of the unit
# vectors) and scale with dx; s2sad does not differentiate the weights with respect to x
_SIMPSON_W = "simpson_weights(x, dx, np.shape(y), axis)"
defvjp(integrate.simpson, "y, x=None, *, dx=1.0, axis=-1", axis=None, name="scipy.integrate.simpson",
       refuse={"x": "s2sad differentiates scipy.integrate.simpson with respect to y and dx only; for a gradient "
                    "with respect to the sample points, use scipy.integrate.trapezoid(y, x)"},
       jvp={"y": "simpson(t, x=x, dx=dx, axis=axis)", "dx": "t * simpson(y, axis=axis)"},
       y=f"unbroadcast(np.expand_dims(g, axis) * {_SIMPSON_W}, y)",
       dx="unbroadcast(g * simpson(y, axis=axis), dx)")

# --- scipy.ndimage -----------------------------------------------------------------------------
# the linear filters, in their input: the gradient is the filter's transpose (filter_grad, for
# every boundary mode), a tangent the filter with zeros outside (cval adds a constant)
_OUTPUT = {"output": "output= chooses where or in which dtype SciPy writes the result, which s2sad does not "
                     "follow; assign the result (and cast it with .astype if needed)"}
_CVAL = {"cval": "s2sad differentiates scipy.ndimage's filters with respect to their input only, not cval"}
_WEIGHTS = {"weights": "s2sad differentiates scipy.ndimage.{0} with respect to its input only; for a gradient "
                       "with respect to the weights, write scipy.signal.{0}(..., mode='same') of arrays padded "
                       "as the mode says (np.pad)"}


def _filter(fun, params: str, kind: str, args: str, axes: str = "axes", inert: tuple[str, ...] = (),
            refuse: dict[str, str] | None = None) -> None:
    call = f"'{kind}', ({args}), mode, {axes}"
    defvjp(fun, params, name=f"scipy.ndimage.{fun.__name__}", unsupported=_OUTPUT, refuse={**_CVAL, **(refuse or {})},
           **{p: None for p in ("mode", *inert)}, jvp={"input": f"filter_apply(t, {call})"},
           input=f"filter_grad(g, input, {call})")


_filter(ndimage.gaussian_filter, "input, sigma, order=0, output=None, mode='reflect', cval=0.0, truncate=4.0, *, "
                                 "radius=None, axes=None", "gaussian", "sigma, order, truncate, radius",
        inert=("sigma", "order", "truncate", "radius", "axes"))
_filter(ndimage.gaussian_filter1d, "input, sigma, axis=-1, order=0, output=None, mode='reflect', cval=0.0, "
                                   "truncate=4.0, *, radius=None", "gaussian1d", "sigma, order, truncate, radius",
        axes="axis", inert=("sigma", "axis", "order", "truncate", "radius"))
_filter(ndimage.uniform_filter, "input, size=3, output=None, mode='reflect', cval=0.0, origin=0, *, axes=None",
        "uniform", "size, origin", inert=("size", "origin", "axes"))
_filter(ndimage.uniform_filter1d, "input, size, axis=-1, output=None, mode='reflect', cval=0.0, origin=0",
        "uniform1d", "size, origin", axes="axis", inert=("size", "axis", "origin"))
for name in ("correlate", "convolve"):
    _filter(getattr(ndimage, name), "input, weights, output=None, mode='reflect', cval=0.0, origin=0, *, axes=None",
            name, "weights, origin", inert=("origin", "axes"), refuse={"weights": _WEIGHTS["weights"].format(name)})
    _filter(getattr(ndimage, f"{name}1d"), "input, weights, axis=-1, output=None, mode='reflect', cval=0.0, origin=0",
            f"{name}1d", "weights, origin", axes="axis", inert=("axis", "origin"),
            refuse={"weights": _WEIGHTS["weights"].format(f"{name}")})

# --- scipy.linalg: np.linalg's least squares and QR ----------------------------------------------
_IN_PLACE = {p: f"SciPy may write over the input in place, where gradients read it; leave {p}=False"
             for p in ("overwrite_a", "overwrite_b")}
lstsq_rule(linalg.lstsq, "a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True, "
                         "lapack_driver=None", name="scipy.linalg.lstsq", unsupported=_IN_PLACE,
           cond=None, check_finite=None, lapack_driver=None)
# mode 'economic' is NumPy's 'reduced', 'full' its 'complete' (square matrices only); the helpers
# refuse the other modes and pivoting as they run
_QR_MODE = "('pivoted' if pivoting else 'reduced' if mode == 'economic' else 'complete' if mode == 'full' else mode)"
defvjp(linalg.qr, "a, overwrite_a=False, lwork=None, mode='full', pivoting=False, check_finite=True",
       name="scipy.linalg.qr", returns_container=True, unsupported={"overwrite_a": _IN_PLACE["overwrite_a"]},
       lwork=None, mode=None, pivoting=None, check_finite=None,
       jvp={"a": f"qr_jvp(t, a, ans, {_QR_MODE})"}, a=f"qr_grad(g, a, ans, {_QR_MODE})")
