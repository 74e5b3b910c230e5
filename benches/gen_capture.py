#!/usr/bin/env python3
"""Writes a Chat Completions SSE capture of about SIZE_MB megabytes to PATH (for benches/rss.sh).

Usage: gen_capture.py PATH SIZE_MB
"""
import json
import sys

path, size = sys.argv[1], int(float(sys.argv[2]) * 1_000_000)
words = "the quick brown fox jumps over a lazy dog while rewind reads every event".split()
with open(path, "w") as out:
    written = 0
    i = 0
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1770000000, "model": "gpt-4.1-mini"}
    first = dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    out.write("data: " + json.dumps(first, separators=(",", ":")) + "\n\n")
    while written < size:
        w = words[i % len(words)] + " "
        chunk = dict(head, choices=[{"index": 0, "delta": {"content": w}, "finish_reason": None}])
        line = "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"
        out.write(line)
        written += len(line)
        i += 1
    last = dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
    out.write("data: " + json.dumps(last, separators=(",", ":")) + "\n\n")
    out.write("data: [DONE]\n\n")
print(f"{path}: {i + 3} events")
