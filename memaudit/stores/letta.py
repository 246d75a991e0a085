"""Letta importer: agent files ``.af`` (current v2 and legacy v1) and archival passage lists."""

from __future__ import annotations

import json
import os

from .export import DEFAULT_MAX_BYTES, Export, MemoryItem, StoreError, claim_unique, expect, parse_time, where
from .models import LettaToolReturn, check_row
from .reading import read_document

__all__ = ["load_letta", "letta_from_data"]

_ORDER = ("core memory blocks first (always in the context window, lines in block order), then the in-context "
          "messages newest first, then archival passages newest first")


def load_letta(path, *, max_bytes: int | None = DEFAULT_MAX_BYTES, include_messages: bool = True) -> Export:
    """Read a Letta export: an agent file or a list of archival passages.

    Accepted shapes: the current AgentFile (``agents`` / ``blocks`` / ``messages``), the legacy
    single-agent file (``core_memory``, ``in_context_message_indices``), either one written as a
    JSON string holding the JSON, a list of archival passages (``GET /v1/agents/{id}/archival-memory``)
    and the archival search response ``{"results": [{"id", "timestamp", "content", "tags"}]}``.

    Items: every non-empty line of every core memory block the agent sees; with
    ``include_messages`` every in-context user and assistant message except the system message
    (whose compiled memory snapshot duplicates the blocks), decoding JSON-wrapped user turns and
    ``system_alert`` summaries and showing every tool call with its string arguments (memory edits
    such as ``memory_insert`` are visible only there); archival
    passages (soft-deleted ones are *retained*, not served).  Evicted legacy messages are
    *retained* (recall memory: kept, not injected).
    """
    path = os.fspath(path)
    return letta_from_data(read_document(path, max_bytes=max_bytes, product="Letta").data, path,
                           include_messages=include_messages)


def letta_from_data(data, path: str = "<letta>", *, include_messages: bool = True) -> Export:
    """The :class:`Export` of already-parsed Letta JSON (see :func:`load_letta`)."""
    if isinstance(data, dict) and "agents" in data:
        return _agent_file_v2(data, path, include_messages)
    if isinstance(data, dict) and "core_memory" in data:
        return _agent_file_v1(data, path, include_messages)
    if isinstance(data, list) and data and all(isinstance(b, dict) and "value" in b and "label" in b for b in data):
        return _blocks_list(data, path)
    if isinstance(data, list):
        return _passages(data, path, "letta archival passages (list)")
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return _passages(data["results"], path, "letta archival search results")
    got = f"keys {sorted(data)[:8]}" if isinstance(data, dict) else type(data).__name__
    raise StoreError(f"{path}: not a Letta export: expected an agent file (with 'agents', or legacy 'core_memory') "
                     f"or a list of archival passages; got {got}")


# -- pieces ----------------------------------------------------------------------

def _unique_ids(items: list[MemoryItem], path: str) -> list[MemoryItem]:
    """``items``, after checking that no two share an id (a block line id such as ``b:line1`` and a message id)."""
    seen: dict[str, MemoryItem] = {}
    for item in items:
        if item.id in seen:
            raise StoreError(f"{path}: memory id {item.id!r} is used twice: by {_origin(seen[item.id])} and by "
                             f"{_origin(item)}; every memory of one export needs its own id")
        seen[item.id] = item
    return items


def _origin(item: MemoryItem) -> str:
    p = item.provenance
    if "block" in p:
        return f"line {p['line']} of block {p['block']!r}"
    return p.get("at", item.source)


def _block_items(blocks: list[tuple[str, dict, str]], path: str, rank0: int, stamped: bool) -> list[MemoryItem]:
    items = []
    for bid, block, at in blocks:
        value = expect(block, "value", str, at, required=True)
        label = expect(block, "label", (str, type(None)), at) or bid
        raw_time = block.get("updated_at") if stamped else None
        for n, line in enumerate(value.split("\n"), start=1):
            if not line.strip():
                continue
            items.append(MemoryItem(id=f"{bid}:line{n}", text=line.strip(), time=parse_time(raw_time),
                                    time_raw=raw_time, rank=rank0 + len(items), source=f"block:{label}",
                                    provenance={"file": path, "block": bid, "label": label, "line": n}))
    return items


def _decode(text: str):
    s = text.strip()
    if s[:1] != "{":
        return None
    try:
        v = json.loads(s)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


#: tools whose return is a delivery receipt, not memory (what was sent is the tool call's own argument)
_RECEIPT_TOOLS = ("send_message",)


def _parts(msg: dict, at: str) -> list[str]:
    content = msg.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise StoreError(f"{at}: content[{j}] must be an object (JSON {{...}}); got "
                                 f"{type(part).__name__}")
            text = expect(part, "text", (str, type(None)), f"{at}.content[{j}]")
            if text:
                parts.append(text)
    elif content is not None:
        raise StoreError(f"{at}: content must be a list of parts or a string; got {type(content).__name__}")
    return parts


def _classify(text: str) -> tuple[str, str | None]:
    """(kind, text) of one user-role content part, recognised by its structure.

    A part that is a JSON object with a string ``type`` is a wrapped turn: ``user_message`` (the
    legacy wrapping of what the user said) gives its ``message``; a system event (``heartbeat``,
    ``login``, ``system_alert``, or any other type) is ``event``, with its ``message`` when it has
    one (a ``system_alert`` carries the summary of evicted messages).  Anything else is ``text``.
    """
    wrapped = _decode(text)
    if wrapped is None or not isinstance(wrapped.get("type"), str):
        return "text", text
    message = wrapped.get("message") if isinstance(wrapped.get("message"), str) else None
    if wrapped["type"] == "user_message":
        return ("text", message) if message is not None else ("text", text)
    return "event:" + wrapped["type"], message


def _tool_calls(msg: dict, at: str) -> list[str]:
    out = []
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise StoreError(f"{at}: tool_calls must be a list; got {type(calls).__name__}")
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise StoreError(f"{at}: tool_calls[{j}].function must be an object; got {fn!r}"[:300])
        name = fn.get("name")
        args = fn.get("arguments")
        decoded = _decode(args) if isinstance(args, str) else (args if isinstance(args, dict) else None)
        if decoded is None:
            out.append(f"{name}({args})")
        else:
            shown = ", ".join(f"{k}={v}" for k, v in decoded.items() if isinstance(v, str) and v)
            out.append(f"{name}({shown})")
    return out


def _tool_return(msg: dict, at: str) -> str | None:
    """The memory a tool-role message carries: the ``message`` of its ``{"status", "message", "time"}``
    text (a memory tool returns the whole block after the edit); None for a receipt or an empty return."""
    if msg.get("name") in _RECEIPT_TOOLS:
        return None
    out = []
    for text in _parts(msg, at):
        envelope = _decode(text)
        if envelope is not None and ("status" in envelope or "message" in envelope):
            ret = check_row(LettaToolReturn, envelope, at + ".content")
            body = ret.message
            if body is None or body.strip() in ("", "None"):
                continue
            out.append(body if ret.status in (None, "OK") else f"[{ret.status}] {body}")
        elif text.strip():
            out.append(text)
    joined = "\n".join(t for t in out if t.strip())
    return joined or None


def _message_item(msg: dict, mid: str, at: str, path: str, rank: int, events: dict) -> MemoryItem | None:
    """The item of one in-context message, or None (system message, system event, empty receipt).

    ``events`` counts the system events recognised (by type), for the report.
    """
    role = expect(msg, "role", str, at, required=True)
    source = f"message:{role}"
    if role == "tool":
        text = _tool_return(msg, at)
        source = f"message:tool:{msg.get('name') or 'tool'}"
    elif role in ("user", "assistant", "summary"):
        out = []
        for part in _parts(msg, at):
            kind, body = _classify(part) if role == "user" else ("text", part)
            if kind.startswith("event:"):
                events[kind[6:]] = events.get(kind[6:], 0) + 1
                if body and body.strip():
                    source = "message:summary"  # a system_alert's summary of evicted messages: in context, not said
                    out.append(body)
            elif body:
                out.append(body)
        out += _tool_calls(msg, at)
        text = "\n".join(t for t in out if t.strip())
    else:
        return None
    if not text or not text.strip():
        return None
    raw_time = expect(msg, "created_at", (str, type(None)), at)
    return MemoryItem(id=mid, text=text, time=parse_time(raw_time), time_raw=raw_time, rank=rank,
                      source=source, provenance={"file": path, "message": mid, "role": role,
                                                 "at": at.split(": ", 1)[-1]})


def _event_warning(path: str, events: dict) -> list[str]:
    if not events:
        return []
    counts = ", ".join(f"{k} {v}" for k, v in sorted(events.items()))
    return [f"{path}: {sum(events.values())} user-role messages are system events ({counts}), not things the user "
            "said: not counted as memories (a system_alert's summary is kept, as message:summary)"]


def _newest_first(items: list[MemoryItem], rank0: int) -> list[MemoryItem]:
    order = sorted(range(len(items)), key=lambda k: (items[k].time or "", k), reverse=True)
    return [MemoryItem(items[k].id, items[k].text, items[k].time, items[k].time_raw, rank0 + r, items[k].source,
                       items[k].provenance) for r, k in enumerate(order)]


# -- shapes ----------------------------------------------------------------------

def _agent_file_v2(data: dict, path: str, include_messages: bool) -> Export:
    agents = expect(data, "agents", list, f"{path}: top level", required=True)
    blocks = expect(data, "blocks", list, f"{path}: top level", default=[])
    warnings: list[str] = []
    block_by_id: dict[str, tuple[dict, str]] = {}
    block_at: dict[str, str] = {}
    for i, block in enumerate(blocks):
        at = where(path, f"blocks[{i}]", block)
        if not isinstance(block, dict):
            raise StoreError(f"{at}: a block must be an object (JSON {{...}}); got {type(block).__name__}")
        bid = expect(block, "id", str, at, required=True)
        claim_unique(block_at, "id", bid, at, f"blocks[{i}]")
        block_by_id[bid] = (block, at)
    seen_blocks: list[str] = []
    seen_block_set: set[str] = set()
    messages: list[MemoryItem] = []
    events: dict[str, int] = {}
    agent_at: dict[str, str] = {}
    for a, agent in enumerate(agents):
        at_agent = where(path, f"agents[{a}]", agent)
        if not isinstance(agent, dict):
            raise StoreError(f"{at_agent}: an agent must be an object (JSON {{...}}); got {type(agent).__name__}")
        aid = expect(agent, "id", (str, type(None)), at_agent)
        if aid is not None:
            claim_unique(agent_at, "id", aid, at_agent, f"agents[{a}]")
        for j, bid in enumerate(expect(agent, "block_ids", list, at_agent, default=[])):
            if not isinstance(bid, str):
                raise StoreError(f"{at_agent}: block_ids[{j}] must be a string; got "
                                 f"{json.dumps(bid, default=repr)[:60]}")
            if bid not in block_by_id:
                warnings.append(f"{at_agent}: block_ids[{j}] {bid!r} names no block of the file; skipped")
            elif bid not in seen_block_set:
                seen_blocks.append(bid)
                seen_block_set.add(bid)
        if not include_messages:
            continue
        in_context_ids = expect(agent, "in_context_message_ids", (list, type(None)), at_agent) or []
        for j, k in enumerate(in_context_ids):
            if not isinstance(k, str):
                raise StoreError(f"{at_agent}: in_context_message_ids[{j}] must be a message id (a string); "
                                 f"got {json.dumps(k, default=repr)[:60]}")
        in_context = set(in_context_ids)
        message_at: dict[str, str] = {}
        for m, msg in enumerate(expect(agent, "messages", list, at_agent, default=[])):
            at = where(path, f"agents[{a}].messages[{m}]", msg)
            if not isinstance(msg, dict):
                raise StoreError(f"{at}: a message must be an object (JSON {{...}}); got {type(msg).__name__}")
            mid = expect(msg, "id", str, at, required=True)
            claim_unique(message_at, "id", mid, at, f"agents[{a}].messages[{m}]")
            if in_context and mid not in in_context:
                continue
            # messages of several agents are told apart by the agent id (or its position)
            item = _message_item(msg, f"{aid if aid is not None else a}:{mid}" if len(agents) > 1 else mid, at,
                                 path, 0, events)
            if item is not None:
                messages.append(item)
    unreferenced = [bid for bid in block_by_id if bid not in seen_block_set]
    warnings += _event_warning(path, events)
    if not agents:
        seen_blocks = list(block_by_id)
    elif unreferenced:
        warnings.append(f"{path}: blocks {unreferenced} are referenced by no agent; not audited")
    items = _block_items([(bid, *block_by_id[bid]) for bid in seen_blocks], path, 0, stamped=False)
    items = _unique_ids(items + _newest_first(messages, len(items)), path)
    warnings.append(f"{path}: a current agent file holds only the context window; archival passages are not in "
                    ".af files (export them from /v1/agents/{id}/archival-memory and audit that file too)")
    return Export("letta", path, "letta agent file (current: agents / blocks / messages)", items, _ORDER,
                  warnings=warnings)


def _agent_file_v1(data: dict, path: str, include_messages: bool) -> Export:
    top = f"{path}: top level"
    core = expect(data, "core_memory", list, top, required=True)
    blocks = []
    label_at: dict[str, str] = {}
    for i, block in enumerate(core):
        at = where(path, f"core_memory[{i}]", block, id_key="label")
        if not isinstance(block, dict):
            raise StoreError(f"{at}: a block must be an object (JSON {{...}}); got {type(block).__name__}")
        label = expect(block, "label", str, at, required=True)
        claim_unique(label_at, "label", label, at, f"core_memory[{i}]")
        expect(block, "updated_at", (str, type(None)), at)
        blocks.append((label, block, at))
    items = _block_items(blocks, path, 0, stamped=True)
    retained: list[dict] = []
    if include_messages:
        msgs = expect(data, "messages", list, top, default=[])
        in_context = expect(data, "in_context_message_indices", (list, type(None)), top)
        keep = set(range(len(msgs))) if in_context is None else set()
        for j, k in enumerate(in_context or []):
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(msgs):
                raise StoreError(f"{top}: in_context_message_indices[{j}] must be an index into messages "
                                 f"(0..{len(msgs) - 1}); got {k!r}")
            keep.add(k)
        served = []
        events: dict[str, int] = {}
        for m, msg in enumerate(msgs):
            at = where(path, f"messages[{m}]", msg)
            if not isinstance(msg, dict):
                raise StoreError(f"{at}: a message must be an object (JSON {{...}}); got {type(msg).__name__}")
            item = _message_item(msg, f"message-{m}", at, path, 0, events)
            if item is None:
                continue
            if m in keep:
                served.append(item)
            else:
                retained.append({"id": item.id, "text": item.text, "where": "evicted message (recall memory)"})
        items += _newest_first(served, len(items))
        warnings = _event_warning(path, events)
    else:
        warnings = []
    items = _unique_ids(items, path)
    return Export("letta", path, f"letta agent file (legacy v1, version {data.get('version')!r})", items, _ORDER,
                  retained=retained, warnings=warnings)


def _passages(rows: list, path: str, shape: str) -> Export:
    items, retained = [], []
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = where(path, i, row)
        if not isinstance(row, dict):
            raise StoreError(f"{at}: a passage must be an object (JSON {{...}}); got {type(row).__name__}")
        pid = expect(row, "id", str, at, required=True)
        claim_unique(seen, "id", pid, at, f"item [{i}]")
        text = expect(row, "text" if "text" in row or "content" not in row else "content", str, at, required=True)
        raw_time = expect(row, "created_at" if "created_at" in row else "timestamp", (str, type(None)), at)
        expect(row, "tags", (list, type(None)), at)
        deleted = expect(row, "is_deleted", (bool, type(None)), at)
        if deleted:
            retained.append({"id": pid, "text": text, "where": "archival passage (soft-deleted)"})
            continue
        if text.strip():
            items.append(MemoryItem(id=pid, text=text, time=parse_time(raw_time), time_raw=raw_time, rank=0,
                                    source="archival", provenance={"file": path, "index": i, "tags": row.get("tags")}))
    return Export("letta", path, shape, _newest_first(items, 0), _ORDER, retained=retained)


def _blocks_list(rows: list, path: str) -> Export:
    """A list of core memory blocks (``blocks.list()`` / ``agents.blocks.list()``): every block line is served."""
    blocks = []
    seen: dict[str, str] = {}
    for i, block in enumerate(rows):
        at = where(path, i, block)
        bid = expect(block, "id", (str, type(None)), at) or expect(block, "label", str, at, required=True)
        claim_unique(seen, "id", bid, at, f"item [{i}]")
        blocks.append((bid, block, at))
    items = _unique_ids(_block_items(blocks, path, 0, stamped=False), path)
    return Export("letta", path, "letta core memory blocks (list)", items, _ORDER,
                  warnings=[f"{path}: a list of blocks holds no messages or passages; audit the agent file for the "
                            "context window"])
