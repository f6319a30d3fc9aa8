"""One-block reference samplers: collapsed Gibbs (:mod:`~bnpdist.inference.reference.gibbs`) and
subsample annealing (:mod:`~bnpdist.inference.reference.anneal`) on one in-memory block, the
single-chain algorithms that the tests and the referee jobs compare the partitioned samplers of
:mod:`bnpdist.algorithms` with.  Nothing in the package uses them.
"""
