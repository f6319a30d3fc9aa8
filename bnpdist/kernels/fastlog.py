"""A natural logarithm over arrays that LLVM vectorises (numba's ``math.log`` is a scalar libm call).

fdlibm's ``e_log.c`` core, branch-free: write x = 2^k m with m in [√2/2, √2), f = m − 1,
s = f/(2+f), and

.. math:: \\log x = k \\log 2 + f - (f^2/2 - s(f^2/2 + R(s^2))),

R a degree-14 minimax polynomial; error < 1 ulp.  The exponent/mantissa split is integer work
on the bits (a first loop), the polynomial float work (a second loop); both vectorise (4 doubles
per AVX2 instruction), about 3× faster than libm here.  Inputs that are not positive normal
finite numbers (0, negative, subnormal, inf, nan) fall back to ``math.log`` for the whole array.
"""
import math

import numba
import numpy as np

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
#: bits of 2^52 + 1023 as a double: (this | e) − this = e − 1023 for an 11-bit exponent e
_MAGIC = 0x4330000000000000
_MAGIC_F = 4503599627371519.0


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _split(xb, mb, eb, n):
    """Mantissa m ∈ [√2/2, √2) into ``mb`` and the exponent (magic-biased) into ``eb``, as bits;
    returns non-zero if some x is not a positive normal finite number."""
    bad = 0
    for i in range(n):
        b = xb[i]
        e = b >> 52                                  # sign and exponent; 1..2046 for valid x
        bad |= ((e - 1) | (2045 - (e - 1))) >> 63
        t = ((b >> 32) & 0xfffff) + 0x95f64 & 0x100000   # 1 << 20 iff the mantissa ≥ √2
        mb[i] = (b & 0x000fffffffffffff) | ((t ^ 0x3ff00000) << 32)
        eb[i] = _MAGIC | ((e & 0x7ff) + (t >> 20))
    return bad


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _poly(m, e, n):
    """m[:n] = log(2^e m) in place (one array read and written, so LLVM needs no alias check)."""
    for i in range(n):
        f = m[i] - 1.0
        s = f / (2.0 + f)
        z = s * s
        w = z * z
        R = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
        hfsq = 0.5 * f * f
        k = e[i] - _MAGIC_F
        m[i] = k * _LN2_HI - ((hfsq - (s * (hfsq + R) + k * _LN2_LO)) - f)


@numba.njit(nogil=True, cache=True)
def vlog(x, out, n, scratch):
    """out[:n] = log(x[:n]); ``x``, ``out`` and the workspace ``scratch`` are distinct float64
    arrays of length ≥ n."""
    if _split(x.view(np.int64), out.view(np.int64), scratch.view(np.int64), n):
        for i in range(n):
            out[i] = math.log(x[i])
        return
    _poly(out, scratch, n)
