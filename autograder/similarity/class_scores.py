"""Which pairs of students wrote a part unusually alike, measured against their own class.

For each part, every student's fingerprints (:mod:`autograder.similarity.fingerprints`) lose
those of the release's own code (the stubs and every other code cell students are given) and,
in a class of at least :data:`MIN_CLASS`, those that more than :data:`COMMON_SHARE` of the class
share (what everyone writes: the class's idiom, not evidence). Two students' **similarity** on a
part is the share of the smaller fingerprint set found in the other (1.0: all of one is in the
other). A part with fewer than :data:`MIN_FINGERPRINTS` left for either student is not scored
for that pair (a short part written alike says nothing).

A part is *flagged* for a pair when

* it is identical or nearly so (similarity at least :data:`NEAR_IDENTICAL`), whatever the size of
  the class: two students handing in the same code is worth a look in a section of three too;
* or, in a class of at least :data:`MIN_CLASS`, it is unusually alike for this class: its
  similarity is at least :data:`MIN_SIMILARITY` and its **z** at least :data:`MIN_Z`, z being the
  distance from the class's median similarity in robust standard deviations (1.4826 times the
  median absolute deviation, at least :data:`SCALE_FLOOR`). A part the whole class writes alike
  has a high median and is not flagged on z.

A smaller class is too small to be measured against itself: nothing is set aside as common, no
z is computed, and only near-identical parts are flagged (:attr:`PartDistribution.measured`).

The shared counts of all pairs come from one product of 0/1 matrices per part (students by the
fingerprints that two to :data:`COMMON_SHARE` of them share), computed in column blocks of
:data:`BLOCK` so that memory stays small: for 300 students, 44,850 pairs take well under a
second a part. Each student's fingerprints are capped (:data:`MAX_FINGERPRINTS` a part).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from autograder.similarity.fingerprints import Fingerprints

__all__ = [
    "BLOCK",
    "COMMON_SHARE",
    "MAX_FINGERPRINTS",
    "MIN_FINGERPRINTS",
    "MIN_CLASS",
    "MIN_SIMILARITY",
    "MIN_Z",
    "NEAR_IDENTICAL",
    "SCALE_FLOOR",
    "PairPart",
    "PartDistribution",
    "PartScores",
    "score_part",
]

#: A fingerprint more than this share of the class has (and at least 4 students) is common.
COMMON_SHARE = 0.25
#: Fingerprints a student's part keeps (the first ones of the part).
MAX_FINGERPRINTS = 2_000
#: A pair whose smaller set of kept fingerprints is smaller than this is not scored on the part.
MIN_FINGERPRINTS = 8
MIN_SIMILARITY, MIN_Z = 0.5, 3.5
#: A part at least this alike is flagged whatever the class (identical or nearly so).
NEAR_IDENTICAL = 0.9
#: A class with fewer students is not measured against itself (module docstring).
MIN_CLASS = 10
#: The smallest spread z is measured in (a class whose pairs all score alike has no spread).
SCALE_FLOOR = 0.05
#: Fingerprint columns multiplied at once.
BLOCK = 4_096


@dataclass(frozen=True)
class PairPart:
    """One part of one pair: its similarity, z (``nan`` where the class was too small to be
    measured), the fingerprints both kept, and whether it is flagged (module docstring)."""

    similarity: float
    z: float
    shared: frozenset[int]
    flagged: bool = False


@dataclass(frozen=True)
class PartDistribution:
    """A part's class distribution: how many pairs were scored, their median and spread, and
    whether the class was large enough to be measured against itself (:data:`MIN_CLASS`)."""

    pairs: int
    median: float
    scale: float
    measured: bool = True


def _kept(
    prints: Sequence[Fingerprints], release: frozenset[int]
) -> tuple[list[set[int]], Counter]:
    sets = [set(list(fp.lines)[:MAX_FINGERPRINTS]) - release for fp in prints]
    counts: Counter = Counter()
    for found in sets:
        counts.update(found)
    if len(sets) >= MIN_CLASS:  # only a class this large says what is its common idiom
        limit = max(4, COMMON_SHARE * len(sets))
        sets = [{h for h in found if counts[h] <= limit} for found in sets]
    return sets, counts


def _shared_counts(sets: list[set[int]], counts: Counter) -> np.ndarray:
    columns = sorted({h for found in sets for h in found if counts[h] >= 2})
    index = {h: i for i, h in enumerate(columns)}
    rows = [np.fromiter((index[h] for h in found if h in index), dtype=np.int64) for found in sets]
    n = len(sets)
    shared = np.zeros((n, n), dtype=np.float32)
    for start in range(0, len(columns), BLOCK):
        block = np.zeros((n, min(BLOCK, len(columns) - start)), dtype=np.float32)
        for i, cols in enumerate(rows):
            inside = cols[(cols >= start) & (cols < start + BLOCK)] - start
            block[i, inside] = 1.0
        shared += block @ block.T
    return shared


@dataclass(frozen=True)
class PartScores:
    """One part's similarities for every pair of the class, and its distribution."""

    students: list[str]
    kept: list[set[int]]
    similarity: np.ndarray
    z: np.ndarray
    scored: np.ndarray
    distribution: PartDistribution

    def pair(self, a: str, b: str) -> PairPart | None:
        """``a`` and ``b``'s :class:`PairPart` (``None``: not both have the part, or it is too
        short to score)."""
        where = {s: i for i, s in enumerate(self.students)}
        if a not in where or b not in where:
            return None
        i, j = sorted((where[a], where[b]))
        if not self.scored[i, j]:
            return None
        shared = frozenset(self.kept[i] & self.kept[j])
        similarity, z = float(self.similarity[i, j]), float(self.z[i, j])
        return PairPart(similarity, z, shared, bool(self._hits()[i, j]))

    def _hits(self) -> np.ndarray:
        near = self.similarity >= NEAR_IDENTICAL - 1e-9
        if self.distribution.measured:
            near |= (self.similarity >= MIN_SIMILARITY) & (self.z >= MIN_Z)
        return self.scored & near

    def flagged(self) -> list[tuple[str, str]]:
        """The pairs ``(a, b)``, ``a < b``, whose part is flagged."""
        hits = self._hits()
        return [
            (self.students[i], self.students[j]) for i, j in zip(*np.nonzero(hits), strict=True)
        ]


def score_part(prints: Mapping[str, Fingerprints], release: frozenset[int]) -> PartScores:
    """One part's :class:`PartScores` among ``prints`` (student -> that part's fingerprints),
    the release's own fingerprints ``release`` left out."""
    students = sorted(prints)
    sets, counts = _kept([prints[s] for s in students], release)
    n = len(students)
    shared = _shared_counts(sets, counts) if n else np.zeros((0, 0), dtype=np.float32)
    sizes = np.array([len(found) for found in sets], dtype=np.float32)
    smaller = np.minimum.outer(sizes, sizes)
    scored = np.triu(np.ones((n, n), dtype=bool), k=1) & (smaller >= MIN_FINGERPRINTS)
    similarity = np.where(scored, shared / np.maximum(smaller, 1.0), 0.0)
    values = similarity[scored]
    median = float(np.median(values)) if values.size else 0.0
    spread = float(np.median(np.abs(values - median))) if values.size else 0.0
    scale = max(1.4826 * spread, SCALE_FLOOR)
    measured = n >= MIN_CLASS
    z = (similarity - median) / scale if measured else np.full((n, n), np.nan)
    distribution = PartDistribution(int(values.size), median, scale, measured)
    return PartScores(students, sets, similarity, z, scored, distribution)
