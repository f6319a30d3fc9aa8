"""Row kernels of the sub-cluster sampler (Chang & Fisher 2013): categorical draws and the
per-unit log proposal probabilities of split/merge launches.

For row i with unnormalised log probabilities ℓ_i (over clusters, or over the two sides of a
launch), p_i = softmax(ℓ_i).  Draws are by inverse CDF against one uniform per row, so a
partition's draws depend only on its seed.
"""
import math

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def draw_rows(logits, u, out):
    """out[i] = the first k with Σ_{j≤k} p_ij > u_i,  p_i = softmax(logits[i])."""
    n, m = logits.shape
    p = np.empty(m)
    for i in range(n):
        top = logits[i, 0]
        for k in range(1, m):
            top = max(top, logits[i, k])
        tot = 0.0
        for k in range(m):
            p[k] = math.exp(logits[i, k] - top)
            tot += p[k]
        target = u[i] * tot
        acc = 0.0
        out[i] = m - 1
        for k in range(m):
            acc += p[k]
            if acc > target:
                out[i] = k
                break


@numba.njit(nogil=True, cache=True)
def unit_logq(logits, ref, unit, out):
    """out[unit_i, 0] += log p_i(ref_i), out[unit_i, 1] += log p_i(1 − ref_i), p_i = softmax of
    the two-column ``logits[i]``: the log probabilities that a launch assigns a labelling and
    its mirror image."""
    for i in range(logits.shape[0]):
        a, b = logits[i, 0], logits[i, 1]
        top = max(a, b)
        lz = top + math.log(math.exp(a - top) + math.exp(b - top))
        r = ref[i]
        out[unit[i], 0] += logits[i, r] - lz
        out[unit[i], 1] += logits[i, 1 - r] - lz
