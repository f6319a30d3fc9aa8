"""One league result: a set, an entrant, a seed, and what the fit scored."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Record:
    """NMI, ARI and AMI (adjusted mutual information, Vinh, Epps & Bailey 2010: 0 for labels
    independent of the truth whatever their K) of the fit's labels to the true labels
    (scikit-learn's), ``k`` = clusters used by the labels, ``median_size`` = their median size, ``seconds`` = wall time of the fit and labelling, ``cpu`` = the CPU
    seconds it took (this process and its children: hardly changed by a busy machine); ``error`` says why
    there is no score (then the scores are None). ``seeded``: the set's data depend on the
    seed (records of one seed share data only with that seed)."""

    set: str
    kind: str
    n: int
    d: int
    true_k: int
    estimator: str
    role: str
    seed: int
    nmi: float | None = None
    ari: float | None = None
    k: int | None = None
    seconds: float | None = None
    cpu: float | None = None
    error: str | None = None
    seeded: bool = False
    ami: float | None = None
    median_size: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        return cls(**d)

    def same_data(self, other: "Record") -> bool:
        return self.set == other.set and (not self.seeded or self.seed == other.seed)
