"""How a package's experiences are coupled through the units they cover (a networkx graph).

Two experiences are coupled when some candidate of each covers the same unit: their choices
then interact in F.  Uncoupled parts are independent sub-problems, and their sizes tell a
reader how hard the package is for an exact solver (bnb decomposes along them).  Not on any
solver's hot path: the report is for people (``memaudit inspect``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import networkx as nx

from .package import Package

__all__ = ["Coupling", "coupling_graph", "coupling_report"]


@dataclass(frozen=True)
class Coupling:
    """Summary of the experience-unit coupling of a package.

    Attributes
    ----------
    n_components : int
        Connected components over experiences (an experience covering nothing is its own).
    largest_experiences, largest_units : int
        Experiences and units in the largest component (by experiences, then units).
    n_shared_units : int
        Units covered by candidates of more than one experience.
    max_experiences_per_unit : int
        The most experiences any one unit is covered from.
    n_singletons : int
        Components of one experience (decided on their own).
    """

    n_components: int
    largest_experiences: int
    largest_units: int
    n_shared_units: int
    max_experiences_per_unit: int
    n_singletons: int

    def to_dict(self) -> dict:
        return asdict(self)


def coupling_graph(pkg: Package) -> nx.Graph:
    """The bipartite graph: one node per experience ``("experience", id)`` and per covered unit
    ``("unit", id)``, an edge where some candidate of the experience covers the unit (a > 0)."""
    g = nx.Graph()
    g.add_nodes_from((("experience", e.id) for e in pkg.experiences), side="experience")
    for c in pkg.candidates:
        for unit, a in c.coverage.items():
            if a > 0:
                g.add_node(("unit", unit), side="unit")
                g.add_edge(("experience", c.experience), ("unit", unit))
    return g


def coupling_report(pkg: Package) -> Coupling:
    """:class:`Coupling` of ``pkg``.

    Examples
    --------
    >>> from memaudit.package import load_package
    >>> c = coupling_report(load_package("packages_data/examples/quickstart.json"))
    >>> c.n_components >= 1 and c.largest_experiences >= 1
    True
    """
    g = coupling_graph(pkg)
    sizes = []
    for comp in nx.connected_components(g):
        n_exp = sum(1 for side, _ in comp if side == "experience")
        if n_exp:
            sizes.append((n_exp, len(comp) - n_exp))
    degrees = [d for (side, _), d in g.degree() if side == "unit"]
    largest = max(sizes, default=(0, 0))
    return Coupling(n_components=len(sizes), largest_experiences=largest[0], largest_units=largest[1],
                    n_shared_units=sum(1 for d in degrees if d > 1), max_experiences_per_unit=max(degrees, default=0),
                    n_singletons=sum(1 for n, _ in sizes if n == 1))
