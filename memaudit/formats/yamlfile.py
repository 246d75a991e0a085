"""YAML documents (scenarios): a safe loader with duplicate keys refused and alias expansion bounded."""

from __future__ import annotations

import functools
import hashlib
import os

from ..errors import InputError
from .reader import (MAX_ALIAS_NODES, MAX_CONTAINERS, MAX_DEPTH, MAX_YAML_BYTES, Document, _check_tree, _json_depth,
                     _parse_failure, _text, _too_deep, read_bytes, read_json)

__all__ = ["parse_yaml", "read_yaml", "read_document"]


@functools.cache
def _yaml_loader():
    """A safe loader that refuses a key given twice in one mapping (merge keys ``<<`` excepted) and
    aliases that expand the document by more than MAX_ALIAS_NODES nodes, or into itself."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_document(self):
            node = super().compose_document()
            if self._n_aliases:
                _check_expansion(node)
            return node

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self._n_aliases += 1
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        dup = key in seen
                    except TypeError:  # an unhashable key: the base class reports it
                        continue
                    if dup:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark, f"key {key!r} appears twice",
                            key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    Loader._n_aliases = 0
    return Loader


class _Expansion(Exception):
    pass


def _check_expansion(root) -> None:
    """Count the nodes of the document as it would be once every alias is expanded (memoised on the
    shared nodes, so the count itself is linear); refuse a cycle or more than MAX_ALIAS_NODES extra."""
    def kids(node):
        v = node.value
        if isinstance(v, list):
            return [x for pair in v for x in pair] if v and isinstance(v[0], tuple) else v
        return ()

    size: dict[int, int] = {}
    open_: set[int] = set()
    n_distinct = 0
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            size[key] = 1 + sum(size[id(k)] for k in kids(node))
            continue
        if key in size:
            continue
        if key in open_:
            raise _Expansion("an alias refers to a node that contains it (a recursive document)")
        open_.add(key)
        n_distinct += 1
        stack.append((node, True))
        stack.extend((k, False) for k in kids(node) if id(k) not in size)
    extra = size.get(id(root), 0) - n_distinct
    if extra > MAX_ALIAS_NODES:
        raise _Expansion(f"its aliases expand it by {extra:,} nodes, more than the {MAX_ALIAS_NODES:,} "
                         "memaudit allows (a 'billion laughs' document?)")


def parse_yaml(raw: bytes, source: str = "<yaml>", *, what: str = "document", error=InputError,
               max_depth: int = MAX_DEPTH, max_containers: int = MAX_CONTAINERS):
    """Parse YAML bytes with a safe loader under the reader's rules (see :func:`_yaml_loader`)."""
    import yaml

    text = _text(raw, source, error)
    if not text.strip():
        raise error(f"{source}: the file is empty; expected a YAML {what}")
    # PyYAML's scanner slows down with the square of the flow nesting: refuse the absurd before it starts
    if _json_depth(raw, yaml=True) > 4 * max_depth:
        raise error(_too_deep(source, max_depth, "YAML"))
    loader = _yaml_loader()(text)
    try:
        data = loader.get_single_data()
    except _Expansion as exc:
        raise error(f"{source}: not accepted: {exc}") from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:  # a ValueError: e.g. an integer too long for Python
        raise _parse_failure(exc, source, "YAML", max_depth, error) from None
    finally:
        loader.dispose()
    if isinstance(data, (dict, list)):
        _check_tree(data, source, error, max_depth=max_depth, nonfinite="keep")
    return data


def read_yaml(path, *, what: str = "document", max_bytes: int = MAX_YAML_BYTES, error=InputError,
              max_depth: int = MAX_DEPTH, max_containers: int = MAX_CONTAINERS) -> Document:
    """Read ``path`` once and parse it as YAML (safe loader, bounded aliases): ``(data, raw_bytes, sha256)``."""
    source = os.fspath(path)
    raw = read_bytes(source, what=what, max_bytes=max_bytes, error=error)
    data = parse_yaml(raw, source, what=what, error=error, max_depth=max_depth, max_containers=max_containers)
    return Document(data, raw, hashlib.sha256(raw).hexdigest())


def read_document(path, *, what: str = "document", error=InputError, **limits) -> Document:
    """:func:`read_yaml` for ``.yaml`` / ``.yml`` files, :func:`read_json` for everything else."""
    reader = read_yaml if os.fspath(path).lower().endswith((".yaml", ".yml")) else read_json
    return reader(path, what=what, error=error, **limits)
