"""The shipped package sets (``packages_data/small``, ``validity``, ``natural``) and their manifests.

Each set directory holds its packages and one ``manifest.json`` (``memaudit-manifest/1``) with,
per package: file name, id, sha256, generator + version + seed + parameters (``hand-built`` for
files written by hand), stream cost and, at each budget fraction, the certified OPT (bnb,
certified by HiGHS), the chosen store, each method's status, time and statistics, and the
certified OPT of the same package without tombstone and compound_update candidates.
Every generated package carries its own default ``budget``: :data:`memaudit.generators.DEFAULT_BUDGET_FRAC`
(0.25) of its stream cost, so ``memaudit solve PACKAGE`` needs no flag.
``scripts/build_packages_data.py`` writes them; ``tests/test_shipped_packages.py`` checks them.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import MemauditError

__all__ = ["MANIFEST_FORMAT", "BUDGET_FRACS", "ABLATION_KINDS", "SETS", "set_specs", "certify_at",
           "build_set", "load_manifest", "manifest_path", "ManifestError"]

#: the manifest format this module writes and reads
MANIFEST_FORMAT = "memaudit-manifest/1"

#: budgets of every shipped result, as fractions of the stream cost
BUDGET_FRACS = (0.1, 0.25, 0.5)

#: the candidate kinds the ablation result drops
ABLATION_KINDS = ("tombstone", "compound_update")

#: the shipped sets
SETS = ("small", "validity", "natural")


class ManifestError(MemauditError, ValueError):
    """A manifest is missing, malformed, or does not match the files beside it."""


def set_specs(name: str) -> list[tuple[str, int, dict]]:
    """The generated packages of set ``name``: ``(family, seed, params)`` each (file: ``<id>.json``)."""
    if name == "small":
        return [("small", seed, {}) for seed in range(30)]
    if name == "validity":
        return [("validity", seed, {}) for seed in range(20)]
    if name == "natural":
        return [("natural", 42, {}), ("natural", 42, {"filler": False})]
    raise ManifestError(f"unknown package set {name!r}; valid sets: {', '.join(SETS)}")


def manifest_path(directory) -> Path:
    return Path(directory) / "manifest.json"


def _method_entry(result, compiled) -> dict:
    from ..certificate import jsonable

    return jsonable({"status": result.status, "value": result.value, "wall_time": round(result.wall_time, 4),
                      "stats": dict(result.stats), "n_chosen": len(result.chosen)})


def certify_at(pkg, budget_frac: float, *, backend: str = "milp-highs") -> dict:
    """Solve ``pkg`` at ``budget_frac`` of its stream cost with bnb, certify with ``backend``.

    Raises
    ------
    ManifestError
        If the result is not certified (the reasons are in the message).
    """
    from ..package import resolve_budget
    from ..solve import solve_package

    budget = resolve_budget(pkg, budget_frac=budget_frac)
    report = solve_package(pkg, budget=budget, method="bnb", backend=backend)
    if not report.certified:
        raise ManifestError(f"package {pkg.id!r} at budget fraction {budget_frac}: not certified: "
                            + "; ".join(report.reasons))
    return {"budget_frac": budget_frac, "budget": budget, "opt": report.value, "certified": True,
            "store": report.compiled.ids(report.result.chosen),
            "methods": {r.method: _method_entry(r, report.compiled) for r in report.results}}


def _entry(file_name: str, sha256: str, pkg, provenance: dict, fracs) -> dict:
    from ..package import stream_cost
    from .ablate import ablate

    started = time.perf_counter()
    results = [certify_at(pkg, f) for f in fracs]
    ablated = ablate(pkg, ABLATION_KINDS)
    ablation = []
    for f, full in zip(fracs, results):
        r = certify_at(ablated, f)
        ablation.append({"budget_frac": f, "budget": r["budget"], "opt": r["opt"],
                         "ratio_to_full_opt": r["opt"] / full["opt"] if full["opt"] > 0 else None,
                         "store": r["store"]})
    return {"file": file_name, "id": pkg.id, "sha256": sha256, **provenance,
            "n_experiences": len(pkg.experiences), "n_candidates": len(pkg.candidates), "n_units": len(pkg.units),
            "n_queries": len(pkg.queries), "cost_model": pkg.cost_model, "stream_cost": stream_cost(pkg),
            "results": results, "ablation": {"dropped_kinds": list(ABLATION_KINDS), "results": ablation},
            "build_seconds": round(time.perf_counter() - started, 3)}


def _recorded_version(path: Path, prev: dict | None):
    """The generator version a shipped generated file was written with (its manifest entry, else its meta)."""
    if prev is not None and "generator_version" in prev:
        return prev["generator_version"]
    try:
        return json.loads(path.read_text(encoding="utf-8"))["meta"]["generator_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_set(name: str, root, *, force: bool = False, allow_rewrite: bool = False, say=None) -> dict:
    """Write set ``name`` under ``root/name``: generated packages, then the manifest.

    Every package is generated and certified in memory first; files and the manifest are
    written only once all of them certified, so a failure leaves the directory as it was.
    A generated file is rewritten only when its bytes would change, and that is refused
    (:class:`ManifestError`) when the file was written under the current generator version
    (shipped files change only with the version) unless ``allow_rewrite``.  A package keeps
    its manifest entry when its sha256, provenance and budgets are unchanged and the memaudit
    and back-end versions are those of the old manifest, unless ``force``.  Any other ``*.json``
    in the directory is a hand-built package: it is never modified, and enters the manifest
    with ``"generator": "hand-built"`` and its certified OPTs; a generated package the set no
    longer lists (its old manifest entry or its ``meta.generator`` says so) is refused instead.
    """
    import hashlib

    from ..certificate import solver_versions, write_json
    from ..fileio import atomic_write
    from ..package import load_package, loaded_sha256, package_to_dict
    from . import DEFAULT_BUDGET_FRAC, GENERATOR_VERSION, GENERATORS, generate
    from .. import __version__

    say = say or (lambda line: None)
    directory = Path(root) / name
    old, old_top = {}, {}
    if manifest_path(directory).exists():
        try:
            old_top = load_manifest(directory)
            old = {p["file"]: p for p in old_top["packages"]}
        except ManifestError as exc:
            say(f"ignoring the old manifest: {exc}")
    versions = {"memaudit_version": __version__, "backend_versions": solver_versions()}
    same_versions = all(old_top.get(k) == v for k, v in versions.items())
    if old and not same_versions and not force:
        say("memaudit or back-end versions differ from the old manifest's: re-certifying every package")

    entries = []  # (file name, sha256, package, provenance, bytes to write or None)
    generated = set()
    for family, seed, params in set_specs(name):
        pkg = generate(family, seed, budget_frac=DEFAULT_BUDGET_FRAC, **params)
        path = directory / f"{pkg.id}.json"
        generated.add(path.name)
        data = (json.dumps(package_to_dict(pkg), indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        write = None
        if not path.exists():
            write = data
        elif path.read_bytes() != data:
            if _recorded_version(path, old.get(path.name)) == GENERATOR_VERSION and not allow_rewrite:
                raise ManifestError(f"{path}: the generator now writes other bytes for it under the same generator "
                                    f"version {GENERATOR_VERSION!r}; bump memaudit.generators.GENERATOR_VERSION "
                                    "(shipped files change only with it), or pass --allow-rewrite")
            write = data
        provenance = {"generator": family, "generator_version": GENERATOR_VERSION, "seed": seed,
                      "params": pkg.meta["params"]}
        entries.append((path.name, hashlib.sha256(data).hexdigest(), pkg, provenance, write))
    for path in sorted(directory.glob("*.json")):
        if path.name in generated or path.name == "manifest.json":
            continue
        pkg = load_package(path)
        prev = old.get(path.name)
        gen = (prev.get("generator") if prev is not None and prev.get("generator") != "hand-built"
               else pkg.meta.get("generator") if pkg.meta.get("generator") in GENERATORS
               and "ablation" not in pkg.meta else None)
        if gen is not None:
            seed = prev.get("seed") if prev is not None else pkg.meta.get("seed")
            raise ManifestError(f"{path}: a generated package ({gen}, seed {seed}) that set {name!r} no longer "
                                "lists; delete it (only hand-built packages are kept beside the generated ones)")
        entries.append((path.name, loaded_sha256(pkg), pkg,
                        {"generator": "hand-built", "generator_version": None, "seed": None, "params": None}, None))

    packages = []
    for file_name, sha, pkg, provenance, _ in entries:
        prev = old.get(file_name)
        if (not force and same_versions and prev is not None and prev.get("sha256") == sha
                and [r["budget_frac"] for r in prev.get("results", [])] == list(BUDGET_FRACS)
                and all(prev.get(k) == v for k, v in provenance.items())):
            packages.append(prev)
            continue
        say(f"certifying {file_name} at {', '.join(f'{f:g}' for f in BUDGET_FRACS)} of the stream cost...")
        packages.append(_entry(file_name, sha, pkg, provenance, BUDGET_FRACS))

    # everything certified: now write the changed files, then the manifest
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, _, _, _, data in entries:
        if data is not None:
            atomic_write(directory / file_name, data)
            say(f"wrote {directory / file_name}")
    manifest = {"format": MANIFEST_FORMAT, "set": name, "memaudit_version": versions["memaudit_version"],
                "generator_version": GENERATOR_VERSION, "budget_fracs": list(BUDGET_FRACS),
                "default_budget_frac": DEFAULT_BUDGET_FRAC, "method": "bnb",
                "backend": "milp-highs", "backend_versions": versions["backend_versions"], "packages": packages}
    write_json(manifest, manifest_path(directory))
    say(f"wrote {manifest_path(directory)} ({len(packages)} packages)")
    return manifest


def load_manifest(directory) -> dict:
    """Read and shape-check ``directory/manifest.json``.

    Raises
    ------
    ManifestError
        Naming the file and the first field that is missing or malformed.
    """
    from pydantic import ValidationError

    from ..formats import read_json, validation_message
    from ..formats.documents import Manifest

    path = manifest_path(directory)
    if not path.exists():
        raise ManifestError(f"{path}: no such file; build it with scripts/build_packages_data.py")
    data = read_json(path, what="manifest", error=ManifestError).data
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise ManifestError(f"{path}: format must be {MANIFEST_FORMAT!r}; got "
                            f"{data.get('format') if isinstance(data, dict) else type(data).__name__!r}")
    fracs = data.get("budget_fracs")
    if (not isinstance(fracs, list) or not fracs
            or not all(_is_number(f) and 0 < f <= 1 for f in fracs)):
        raise ManifestError(f"{path}: budget_fracs must be a non-empty list of numbers in (0, 1]; got {fracs!r}")
    packages = data.get("packages")
    if not isinstance(packages, list):
        raise ManifestError(f"{path}: packages must be a list")
    for i, p in enumerate(packages):
        for key in ("file", "id", "sha256", "generator", "results", "ablation"):
            if not isinstance(p, dict) or key not in p:
                raise ManifestError(f"{path}: packages[{i}] has no {key!r}")
        if not isinstance(p["file"], str) or os.sep in p["file"] or "/" in p["file"] or p["file"].startswith("."):
            raise ManifestError(f"{path}: packages[{i}].file must be a plain file name; got {p['file']!r}")
        where = f"{path}: packages[{i}] ({p['file']!r})"
        for key in ("id", "sha256", "generator"):
            if not isinstance(p[key], str) or not p[key]:
                raise ManifestError(f"{where}.{key} must be a non-empty string; got {p[key]!r}")
        ablation = p["ablation"]
        if not isinstance(ablation, dict):
            raise ManifestError(f"{where}.ablation must be an object")
        for key in ("dropped_kinds", "results"):
            if key not in ablation:
                raise ManifestError(f"{where}.ablation has no {key!r}")
        if not isinstance(ablation["dropped_kinds"], list) or not all(isinstance(k, str)
                                                                      for k in ablation["dropped_kinds"]):
            raise ManifestError(f"{where}.ablation.dropped_kinds must be a list of candidate kinds")
        for name, rows in (("results", p["results"]), ("ablation.results", ablation["results"])):
            if not isinstance(rows, list):
                raise ManifestError(f"{where}.{name} must be a list")
            for j, r in enumerate(rows):
                if not isinstance(r, dict):
                    raise ManifestError(f"{where}.{name}[{j}] must be an object")
                for key in ("budget_frac", "budget", "opt", "store"):
                    if key not in r:
                        raise ManifestError(f"{where}.{name}[{j}] has no {key!r}")
                for key in ("budget_frac", "budget", "opt"):
                    if not _is_number(r[key]) or r[key] < 0:
                        raise ManifestError(f"{where}.{name}[{j}].{key} must be a finite number >= 0; "
                                            f"got {r[key]!r}")
                if not isinstance(r["store"], list) or not all(isinstance(c, str) for c in r["store"]):
                    raise ManifestError(f"{where}.{name}[{j}].store must be a list of candidate ids")
            at = [r["budget_frac"] for r in rows]
            if at != fracs:
                raise ManifestError(f"{where}: {name} are at budget fractions {at}, not the manifest's "
                                    f"budget_fracs {fracs}")
    try:
        Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(validation_message(exc, data, Manifest, str(path), "the manifest")) from None
    return data


def _is_number(x) -> bool:
    from ..formats.fields import finite

    return finite(x) is not None
