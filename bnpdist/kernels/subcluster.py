"""Row kernels of the sub-cluster sampler (Chang & Fisher 2013): categorical draws and the
per-unit log proposal probabilities of split/merge launches.

For row i with unnormalised log probabilities ℓ_i (over clusters, or over the two sides of a
launch), p_i = softmax(ℓ_i).  Draws are by inverse CDF against one uniform per row, so a
partition's draws depend only on its seed.

The normaliser Σ_k exp(ℓ_ik − max ℓ_i) is ≥ 1; terms below 2⁻⁵³/m (ℓ_ik − max ℓ_i < :data:`SKIP`
− log m) are left out: all m of them together are less than half a unit in the last place of
the sum, so the draw is the full sum's up to that sum's own rounding, and a row that one
cluster dominates (well-separated clusters: most rows) costs one exponential instead of m.
"""
import math

import numba
import numpy as np

#: log 2⁻⁵³: a row's terms below e^SKIP / m add up to less than an ulp of its normaliser
SKIP = -53.0 * math.log(2.0)


@numba.njit(nogil=True, cache=True)
def draw_rows(logits, u, out):
    """out[i] = the first k with Σ_{j≤k} p_ij > u_i,  p_i = softmax(logits[i]) (terms below
    e^SKIP/m of the largest counted as 0, module docstring)."""
    n, m = logits.shape
    p = np.empty(m)
    cut = SKIP - math.log(m)
    for i in range(n):
        top = logits[i, 0]
        for k in range(1, m):
            top = max(top, logits[i, k])
        lo = top + cut
        tot = 0.0
        for k in range(m):
            if logits[i, k] > lo:
                p[k] = math.exp(logits[i, k] - top)
                tot += p[k]
            else:
                p[k] = 0.0
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
        gap = min(a, b) - top
        # below SKIP − 1, 1 + e^gap rounds to 1: log of it is 0 without the two calls
        lz = top if gap < SKIP - 1.0 else top + math.log(1.0 + math.exp(gap))
        r = ref[i]
        out[unit[i], 0] += logits[i, r] - lz
        out[unit[i], 1] += logits[i, 1 - r] - lz
