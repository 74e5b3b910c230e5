#!/usr/bin/env python3
"""Copy one raw matrix recording into the fixtures, cleaned the way ../shared/corpus/transcripts was.

Usage: matrix_clean.py RAW DEST OLD=NEW [OLD=NEW ...]

- every text file is copied with each OLD path replaced by NEW (longest first), and also the
  dash-encoded form Claude Code uses for project folders (`/tmp/x.y/project` -> `-tmp-x-y-project`);
- in requests.jsonl the clients' own system prompt / instructions / tool definitions are replaced by
  "<omitted: N bytes of the client's own prompt and tool definitions>" (messages / input stay intact;
  for Chat Completions requests, the content of the role "system" messages, which is that prompt);
- the runner's bookkeeping (mock.pid, client.pid, mock.stderr) is left out.
"""
import json, os, re, shutil, sys

SKIP = {"mock.pid", "client.pid", "mock.stderr"}
OMIT_KEYS = ("system", "instructions", "tools")


def dashed(p):
    return re.sub(r"[^A-Za-z0-9]", "-", p)


def main():
    raw, dest, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
    subs = []
    for p in pairs:
        old, new = p.split("=", 1)
        subs.append((old, new))
        subs.append((dashed(old), dashed(new)))
    subs.sort(key=lambda s: -len(s[0]))

    def clean(text):
        for old, new in subs:
            text = text.replace(old, new)
        return text

    os.makedirs(dest, exist_ok=True)
    for dirpath, _dirs, files in os.walk(raw):
        rel = os.path.relpath(dirpath, raw)
        for name in sorted(files):
            if name in SKIP:
                continue
            src = os.path.join(dirpath, name)
            out_name = clean(name)
            out_dir = os.path.join(dest, clean(rel)) if rel != "." else dest
            os.makedirs(out_dir, exist_ok=True)
            dst = os.path.join(out_dir, out_name)
            data = open(src, "rb").read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                shutil.copyfile(src, dst)
                continue
            text = clean(text)
            if name == "requests.jsonl":
                lines = []
                for line in text.splitlines():
                    if not line.strip():
                        continue
                    o = json.loads(line)
                    body = o.get("body")
                    if isinstance(body, dict) and str(o.get("path", "")).split("?")[0].endswith("/chat/completions"):
                        # Chat Completions carries the client's prompt as role "system" messages: their
                        # content goes, the messages themselves (and their order) stay
                        for m in body.get("messages") or []:
                            if isinstance(m, dict) and m.get("role") == "system" and m.get("content"):
                                n = len(json.dumps(m["content"], ensure_ascii=False, separators=(",", ":")).encode())
                                m["content"] = f"<omitted: {n} bytes of the client's own prompt and tool definitions>"
                    if isinstance(body, dict):
                        for k in OMIT_KEYS:
                            if k in body and body[k] not in (None, "", []):
                                n = len(json.dumps(body[k], ensure_ascii=False, separators=(",", ":")).encode())
                                body[k] = f"<omitted: {n} bytes of the client's own prompt and tool definitions>"
                    lines.append(json.dumps(o, ensure_ascii=False))
                text = "\n".join(lines) + "\n"
            with open(dst, "w", encoding="utf-8") as f:
                f.write(text)


if __name__ == "__main__":
    main()
