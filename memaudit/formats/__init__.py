"""One format layer: the bounded reader, the error translator and the models of memaudit's documents.

Read any input with :func:`read_json` / :func:`read_yaml` / :func:`read_document`::

    data, raw, sha256 = read_json(path, what="Mem0 export", max_bytes=256 * 2**20, error=StoreError)

Each returns a :class:`Document` ``(data, raw_bytes, sha256)`` of one read of the file and raises
``error`` (a :class:`memaudit.errors.MemauditError` subclass, default ``InputError``) as one line for
every failure: missing file, a device or a silent pipe, too large, not UTF-8, invalid JSON / YAML,
duplicate keys, NaN literals, nesting deeper than ``MAX_DEPTH``, integers longer than
``MAX_INT_DIGITS``, more than ``MAX_CONTAINERS`` lists / objects or ``MAX_VALUES`` values, YAML aliases
expanding by more than ``MAX_ALIAS_NODES`` nodes.  Validate the data with a pydantic model and turn
a ValidationError into one line with :func:`validation_message`.
"""

from .reader import (MAX_ALIAS_NODES, MAX_BYTES, MAX_CONTAINERS, MAX_DEPTH, MAX_INT_DIGITS, MAX_VALUES,
                     MAX_YAML_BYTES, PIPE_IDLE_SECONDS, Document, NonFinite, json_path, parse_json, read_bytes,
                     read_json)
from .yamlfile import parse_yaml, read_document, read_yaml
from .translate import describe, escape_control, json_kind, more, show, validation_message, where

__all__ = ["Document", "NonFinite", "read_bytes", "read_json", "read_yaml", "read_document", "parse_json",
           "parse_yaml", "json_path", "describe", "validation_message", "where", "show", "more", "json_kind",
           "escape_control", "MAX_BYTES", "MAX_YAML_BYTES", "MAX_DEPTH", "MAX_CONTAINERS", "MAX_VALUES",
           "MAX_INT_DIGITS", "MAX_ALIAS_NODES", "PIPE_IDLE_SECONDS"]
