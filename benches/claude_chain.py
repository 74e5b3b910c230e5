"""A long Claude Code transcript made from a real one: its records chained COPIES times, each copy
with fresh uuids, message, tool and request ids, its first record parented to the previous copy's
last. Used by benches/transcript.sh (one big transcript) and benches/claude_home.sh (a home of
many).

    python3 benches/claude_chain.py SOURCE OUT COPIES [SESSION_ID] [SEED] [--compact]
"""
import json
import random
import sys
import uuid


def chain(lines, copies, out, session=None, rnd=None, tag="", compact=False):
    """Writes `copies` chained copies of the records `lines` to the open file `out`."""
    new_id = (lambda: str(uuid.UUID(int=rnd.getrandbits(128)))) if rnd else (lambda: str(uuid.uuid4()))
    seps = (",", ":") if compact else None
    prev = None
    for copy in range(copies):
        m = {}
        for r in lines:
            if r.get("type") in ("last-prompt", "queue-operation") and copy > 0:
                continue
            if r.get("type") == "last-prompt":
                continue
            r = json.loads(json.dumps(r))
            if session and "sessionId" in r:
                r["sessionId"] = session
            if "uuid" in r:
                m[r["uuid"]] = new_id()
                r["uuid"] = m[r["uuid"]]
            if r.get("parentUuid") is not None:
                r["parentUuid"] = m.get(r["parentUuid"], r["parentUuid"])
            elif "parentUuid" in r and prev and copy > 0:
                r["parentUuid"] = prev
            if "sourceToolAssistantUUID" in r:
                r["sourceToolAssistantUUID"] = m.get(r["sourceToolAssistantUUID"], r["sourceToolAssistantUUID"])
            msg = r.get("message")
            suffix = f"{tag}_{copy}"
            if isinstance(msg, dict):
                if "id" in msg:
                    msg["id"] = f"{msg['id']}{suffix}"
                for b in msg.get("content") if isinstance(msg.get("content"), list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_use":
                        b["id"] = f"{b['id']}{suffix}"
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        b["tool_use_id"] = f"{b['tool_use_id']}{suffix}"
            if tag and "requestId" in r:
                r["requestId"] = f"{r['requestId']}{suffix}"
            out.write(json.dumps(r, separators=seps, ensure_ascii=not compact) + "\n")
            if "uuid" in r:
                prev = r["uuid"]


def records(path):
    return [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--compact"]
    src, out, copies = args[0], args[1], int(args[2])
    with open(out, "w") as f:
        chain(records(src), copies, f, compact="--compact" in sys.argv)
