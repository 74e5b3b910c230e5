#!/usr/bin/env bash
# Linearity: shapes of input that once made rewind super-linear, each run at N and 4N. A linear
# stage takes about 4× as long at 4N; a quadratic one about 16×. Each row prints both times (best
# of ROUNDS runs of `rewind diagnose --format json`, or of the command named) and their ratio.
#
#   bash benches/linear.sh [N]        (N defaults to 5000; ROUNDS defaults to 3)
#   SHAPES="parse-errors row-issues" bash benches/linear.sh    (only the shapes named)
#   REWIND_BIN=/path/to/rewind bash benches/linear.sh         (another build)
#
# The shapes: many spans on one line of a minified export; many blocks or items in one record
# of a transcript, a Codex rollout or a stream-json log; many calls in a stream, a stream-json
# log, a rollout or one message of an export; many failing or crashing sessions, zero-usage
# steps, empty text parts, unusable steps in one message, turns of a stored session; the same
# and messages a large log's diagnosis forgets (after a tool that never ends, before writes
# to the messages it forgot, or each with a call id the one before had); parse
# errors of distinct payloads; parallel calls, abandoned branches, a dead-end branch and resumed
# turns in a Claude Code transcript; repair plans for many unclosed steps, running tools and
# merged steps, and their application to an export, a database (with and without the indexes
# on its event log), a transcript of orphan results and a rollout of unanswered calls; issues
# of one stored row or one stream event; the HTML report of many findings or sessions; `rewind
# check` over a folder of many files; and a payload with an issue per array item in the human
# output (where the size of the output is what grows).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5000}
rounds=${ROUNDS:-3}
cargo build --profile dist --quiet
bin=${REWIND_BIN:-target/dist/rewind}
dir=target/bench-linear
mkdir -p "$dir"

generate() {  # kind n file
python3 - "$1" "$2" "$3" <<'PY'
import json, sys
kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = open(path, "w")
def w(o): out.write(json.dumps(o, separators=(",", ":")) + "\n")
def d(o): out.write("data: " + json.dumps(o, separators=(",", ":")) + "\n\n")
S = "ses_3c1f0e2a9ffeB4nM5qW6eR7tY8"
tokens = {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}
def export(messages):
    info = {"id": S, "slug": "s", "projectID": "prj", "directory": "/r", "title": "t",
            "version": "1.17.3", "time": {"created": 1, "updated": 2}}
    out.write(json.dumps({"info": info, "messages": messages}, separators=(",", ":")))
def user(mid):
    return {"info": {"id": mid, "sessionID": S, "role": "user", "time": {"created": 1},
                     "agent": "build", "model": {"providerID": "openai", "modelID": "gpt-5"}},
            "parts": [{"id": "prt_" + mid, "sessionID": S, "messageID": mid, "type": "text",
                       "text": "go"}]}
def assistant(mid, parent, parts):
    return {"info": {"id": mid, "sessionID": S, "role": "assistant",
                     "time": {"created": 2, "completed": 3}, "parentID": parent,
                     "modelID": "gpt-5", "providerID": "openai", "mode": "build",
                     "agent": "build", "path": {"cwd": "/r", "root": "/r"}, "cost": 0,
                     "tokens": tokens, "finish": "tool-calls"}, "parts": parts}
if kind == "har-one-line":
    # A HAR written on one line, of N entries whose Anthropic streams are cut short (the
    # sample's): a unit per entry, each with findings, all on line 1.
    har = json.load(open("samples/har-streaming-response.har", encoding="utf-8"))
    entry = har["log"]["entries"][0]
    body = json.loads(entry["request"]["postData"]["text"])
    body["messages"][0]["content"][0]["text"] += " " + "x" * 2000
    entry["request"]["postData"]["text"] = json.dumps(body)
    har["log"]["entries"] = [entry] * n
    out.write(json.dumps(har, separators=(",", ":")))
    sys.exit(0)
if kind == "export-one-line":
    msgs = [user("msg_00000000000000")]
    for i in range(1, n + 1):
        mid = f"msg_{i:014d}"
        msgs.append(assistant(mid, "msg_00000000000000", [
            {"type": "step-start", "id": f"prt_{i:014d}00", "sessionID": S, "messageID": mid},
            {"type": "tool", "callID": f"call_{i:08d}", "tool": "read", "id": f"prt_{i:014d}01",
             "sessionID": S, "messageID": mid,
             "state": {"status": "running", "input": {"filePath": "/a"}, "time": {"start": 1}}},
            {"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": tokens,
             "id": f"prt_{i:014d}02", "sessionID": S, "messageID": mid}]))
    export(msgs)
elif kind == "export-turns":
    msgs = []
    for i in range(n):
        uid, aid = f"msg_{i:08d}u", f"msg_{i:08d}v"
        msgs.append(user(uid))
        msgs.append(assistant(aid, uid, [
            {"type": "step-start", "id": f"prt_{i:08d}v", "sessionID": S, "messageID": aid},
            {"type": "text", "text": "done.", "id": f"prt_{i:08d}w", "sessionID": S,
             "messageID": aid},
            {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": tokens,
             "id": f"prt_{i:08d}x", "sessionID": S, "messageID": aid}]))
    export(msgs)
elif kind == "transcript-blocks":
    w({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
       "message": {"role": "user", "content": [{"type": "text", "text": "x"}] * n}})
    w({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
       "message": {"id": "m1", "model": "m", "content": [{"type": "text", "text": "ok"}]}})
elif kind == "codex-compacted":
    w({"timestamp": "t", "type": "session_meta",
       "payload": {"id": "s", "cwd": "/tmp", "cli_version": "0.169.0"}})
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    w({"timestamp": "t", "type": "compacted",
       "payload": {"message": "summary", "replacement_history": [item] * n}})
elif kind == "stream-json-blocks":
    w({"type": "system", "subtype": "init", "session_id": "s"})
    w({"type": "assistant", "session_id": "s", "message": {"id": "m", "model": "claude", "content": [
        {"type": "tool_use", "id": f"toolu_{i:08d}", "name": "Read", "input": {}}
        for i in range(n)]}})
elif kind == "stream-json-results":
    w({"type": "system", "subtype": "init", "session_id": "s"})
    for i in range(n):
        w({"type": "assistant", "session_id": "s", "message": {"id": f"msg_{i}", "model": "claude",
           "content": [{"type": "tool_use", "id": f"toolu_{i:08d}", "name": "Read", "input": {}}]}})
        w({"type": "user", "session_id": "s", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:08d}", "content": "ok"}]}})
elif kind in ("sse-tools", "sse-tools-bad-chunk"):
    chunk = lambda delta, finish=None: {"id": "c", "object": "chat.completion.chunk",
        "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta,
                                                 "finish_reason": finish}]}
    args = "{}" if kind == "sse-tools" else "{"
    for i in range(n):
        d(chunk({"tool_calls": [{"index": i, "id": f"call_{i:08d}", "type": "function",
                                 "function": {"name": "f", "arguments": args}}]}))
    if kind == "sse-tools":
        d(chunk({}, "tool_calls"))
        out.write("data: [DONE]\n\n")
    else:
        out.write('data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}{"bad"\n\n')
elif kind in ("codex-pairs", "codex-unanswered"):
    w({"timestamp": "t", "type": "session_meta",
       "payload": {"id": "s", "cwd": "/tmp", "cli_version": "0.169.0"}})
    for i in range(n):
        w({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call",
           "name": "shell", "arguments": "{}", "call_id": f"call_{i:08d}"}})
        if kind == "codex-pairs":
            w({"timestamp": "t", "type": "response_item", "payload": {
                "type": "function_call_output", "call_id": f"call_{i:08d}", "output": "ok"}})
        else:
            w({"timestamp": "t", "type": "response_item", "payload": {"type": "message",
               "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}})
elif kind == "sessions-failing":
    for i in range(n):
        s = f"ses_{i:08d}"
        w({"type": "step_start", "timestamp": 1, "sessionID": s, "part": {"id": f"prt_{i:08d}",
           "sessionID": s, "messageID": f"msg_{i:08d}", "type": "step-start"}})
        w({"type": "error", "timestamp": 2, "sessionID": s,
           "error": {"name": "UnknownError", "data": {"message": f"boom {i}"}}})
elif kind == "sessions-crashing":
    # Many sessions, each with a tool running when a schema validation (ZodError) killed it.
    zod = json.dumps([{"code": "invalid_type", "expected": "number", "received": "nan",
                       "path": ["summary", "diffs", 0, "additions"],
                       "message": "Expected number, received nan"}], indent=2)
    for i in range(n):
        s = f"ses_{i:08d}"
        w({"type": "tool_use", "timestamp": 1, "sessionID": s, "part": {"id": f"prt_{i:08d}",
           "sessionID": s, "messageID": f"msg_{i:08d}", "type": "tool", "callID": f"c{i}",
           "tool": "bash", "state": {"status": "running", "input": {"a": 1},
                                     "time": {"start": 1}}}})
        w({"type": "error", "timestamp": 2, "sessionID": s,
           "error": {"name": "UnknownError", "data": {"message": zod}}})
elif kind == "zero-usage-steps":
    for i in range(n):
        s = f"ses_{i:08d}"
        w({"type": "step_finish", "timestamp": 1, "sessionID": s, "part": {"id": f"prt_{i:08d}",
           "sessionID": s, "messageID": f"msg_{i:08d}", "type": "step-finish", "reason": "stop",
           "cost": 0, "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                 "cache": {"read": 0, "write": 0}}}})
elif kind == "empty-text-parts":
    for i in range(n):
        w({"type": "text", "timestamp": 1, "sessionID": "ses_1", "part": {"id": f"prt_{i:08d}",
           "sessionID": "ses_1", "messageID": f"msg_{i:08d}", "type": "text", "text": "",
           "time": {"start": 1, "end": 1}}})
elif kind in ("steps", "open-tool-then-steps", "late-writes", "duplicate-calls"):
    # Messages of one step each in one session: what a large log's diagnosis forgets. After a
    # message whose tool never ends (looked at again at every new message), followed by a write
    # to each message already closed (the log is read again), or each with a tool call of the
    # same id (each message needs the first: read again, keeping from there).
    def step(i, kind, extra):
        w({"type": f"step_{kind}", "timestamp": 1, "sessionID": "ses_1",
           "part": {"id": f"prt_{i:08d}{kind[0]}", "sessionID": "ses_1",
                    "messageID": f"msg_{i:08d}", "type": f"step-{kind}", **extra}})
    if kind == "open-tool-then-steps":
        w({"type": "tool_use", "timestamp": 1, "sessionID": "ses_1", "part": {
           "id": "prt_0", "sessionID": "ses_1", "messageID": "msg_0", "type": "tool",
           "callID": "c0", "tool": "bash", "state": {"status": "running", "input": {"a": 1},
                                                      "time": {"start": 1}}}})
    for i in range(n):
        step(i, "start", {})
        if kind == "duplicate-calls":
            w({"type": "tool_use", "timestamp": 1, "sessionID": "ses_1", "part": {
               "id": f"prt_{i:08d}t", "sessionID": "ses_1", "messageID": f"msg_{i:08d}",
               "type": "tool", "callID": "c_same", "tool": "bash",
               "state": {"status": "completed", "input": {"a": 1}, "output": "o", "title": "t",
                         "metadata": {}, "time": {"start": 1, "end": 2}}}})
        step(i, "finish", {"reason": "stop", "cost": 0, "tokens": tokens})
    if kind == "late-writes":
        for i in range(n):
            step(i, "finish", {"reason": "stop", "cost": 0.5, "tokens": tokens})
elif kind == "unusable-steps":
    for i in range(n):
        part = {"sessionID": "ses_1", "messageID": "msg_1"}
        w({"type": "tool_use", "timestamp": 1, "sessionID": "ses_1", "part": {**part,
           "id": f"prt_{i:08d}a", "type": "tool", "callID": f"c{i}", "tool": "bash",
           "state": {"status": "completed", "input": {"a": 1}, "output": "o", "title": "t",
                     "metadata": {}, "time": {"start": 1, "end": 2}}}})
        w({"type": "step_finish", "timestamp": 1, "sessionID": "ses_1", "part": {**part,
           "id": f"prt_{i:08d}b", "type": "step-finish", "reason": "unknown", "cost": 0,
           "tokens": tokens}})
elif kind == "issues-on-one-line":
    w({"type": "text", "timestamp": 1, "sessionID": "ses_1", "part": {"id": "prt_1",
       "sessionID": "ses_1", "messageID": "msg_1", "type": "patch", "hash": "h",
       "files": [0] * n}})
elif kind == "parse-errors":
    # A server log of many distinct concatenated chunks, each logged as an AI_JSONParseError.
    for i in range(n):
        text = '{"id":"c%d' % i + 'data:{"id":"c%d","object":"chat.completion.chunk"}' % i
        w({"type": "log", "level": "error", "timestamp": "2026-02-14T08:34:12.210Z",
           "service": "session.processor", "message": "process",
           "error": {"name": "AI_JSONParseError", "cause": {}, "text": text}})
elif kind == "stitch-parallel":
    # A Claude Code transcript of turns with two parallel calls, each in a record of its own.
    prev = None
    def rec(t, u, p, content, mid=None):
        m = {"id": mid, "model": "claude", "content": content} if mid else {"role": t,
             "content": content}
        w({"type": t, "uuid": u, "parentUuid": p, "sessionId": "s", "message": m})
    for i in range(n):
        rec("user", f"p{i}", prev, [{"type": "text", "text": "go"}])
        rec("assistant", f"a{i}", f"p{i}", [{"type": "tool_use", "id": f"ta{i}", "name": "R",
            "input": {}}], f"m{i}")
        rec("assistant", f"b{i}", f"a{i}", [{"type": "tool_use", "id": f"tb{i}", "name": "R",
            "input": {}}], f"m{i}")
        rec("user", f"ra{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"ta{i}",
            "content": "ok"}])
        rec("user", f"rb{i}", f"b{i}", [{"type": "tool_result", "tool_use_id": f"tb{i}",
            "content": "ok"}])
        rec("assistant", f"c{i}", f"rb{i}", [{"type": "text", "text": "done"}], f"n{i}")
        prev = f"c{i}"
elif kind in ("transcript-branches", "transcript-dead-end", "transcript-resumes"):
    # A Claude Code transcript: turns that each leave an abandoned branch behind (rewound), one
    # long dead-end branch of unanswered calls, or turns resumed with the client's own reply.
    def rec(t, u, p, content, mid=None, **extra):
        m = {"id": mid, "model": extra.pop("model", "claude"), "content": content} if mid \
            else {"role": t, "content": content}
        w({"type": t, "uuid": u, "parentUuid": p, "sessionId": "s", "message": m, **extra})
    prev = None
    for i in range(n):
        rec("user", f"p{i}", prev, "go")
        if kind == "transcript-branches":
            rec("user", f"x{i}", f"p{i}", "an edited prompt")
            rec("assistant", f"y{i}", f"x{i}", [{"type": "text", "text": "old"}], f"o{i}")
        elif kind == "transcript-resumes":
            rec("user", f"q{i}", f"p{i}", "Continue from where you left off.", isMeta=True)
            rec("assistant", f"s{i}", f"q{i}", [{"type": "text", "text": "No response."}],
                f"s{i}", model="<synthetic>")
            rec("user", f"r{i}", f"s{i}", "go on")
            prev = f"r{i}"
        rec("assistant", f"a{i}", prev if kind == "transcript-resumes" else f"p{i}",
            [{"type": "text", "text": "ok"}], f"m{i}")
        prev = f"a{i}"
    if kind == "transcript-dead-end":
        at = "p0"
        for i in range(n):
            rec("assistant", f"d{i}", at, [{"type": "tool_use", "id": f"t{i}", "name": "R",
                "input": {}}], f"dm{i}")
            at = f"d{i}"
        w({"type": "last-prompt", "leafUuid": f"a{n - 1}", "sessionId": "s"})
elif kind in ("repair-unclosed", "repair-running"):
    # An export of many steps, each left unclosed (no step-finish) or with its tool running.
    msgs = [user("msg_00000000000000")]
    for i in range(1, n + 1):
        mid = f"msg_{i:014d}"
        state = ({"status": "completed", "input": {"filePath": "/a"}, "output": "ok",
                  "title": "a", "metadata": {}, "time": {"start": 1, "end": 2}}
                 if kind == "repair-unclosed" else
                 {"status": "running", "input": {"filePath": "/a"}, "time": {"start": 1}})
        parts = [{"type": "step-start", "id": f"prt_{i:014d}00", "sessionID": S, "messageID": mid},
                 {"type": "tool", "callID": f"call_{i:08d}", "tool": "read", "state": state,
                  "id": f"prt_{i:014d}01", "sessionID": S, "messageID": mid}]
        if kind == "repair-running":
            parts.append({"type": "step-finish", "reason": "tool-calls", "cost": 0,
                          "tokens": tokens, "id": f"prt_{i:014d}02", "sessionID": S,
                          "messageID": mid})
        msgs.append(assistant(mid, "msg_00000000000000", parts))
    export(msgs)
elif kind == "repair-merged":
    # One message of many merged steps (a text after a tool, no boundary between), every third
    # one also after a step-start that left the step before it open.
    mid = "msg_00000000000001"
    parts = [{"type": "step-start", "id": "prt_00000000000000a", "sessionID": S,
              "messageID": mid}]
    for i in range(n):
        if i % 3 == 2:
            parts.append({"type": "step-start", "id": f"prt_{i:014d}s", "sessionID": S,
                          "messageID": mid})
        parts.append({"type": "tool", "callID": f"call_{i:08d}", "tool": "read",
                      "id": f"prt_{i:014d}t", "sessionID": S, "messageID": mid,
                      "state": {"status": "completed", "input": {"filePath": "/a"},
                                "output": "ok", "title": "a", "metadata": {},
                                "time": {"start": 1, "end": 2}}})
        parts.append({"type": "text", "text": "next", "id": f"prt_{i:014d}x", "sessionID": S,
                      "messageID": mid})
    export([user("msg_00000000000000"), assistant(mid, "msg_00000000000000", parts)])
elif kind == "export-parallel-calls":
    # One assistant message of many tool calls (one step calling them all), then a reply; the
    # session is on Anthropic.
    mid = "msg_00000000000001"
    parts = [{"type": "step-start", "id": "prt_00000000000000a", "sessionID": S,
              "messageID": mid}]
    for i in range(n):
        parts.append({"type": "tool", "callID": f"call_{i:08d}", "tool": "read",
                      "id": f"prt_{i:014d}t", "sessionID": S, "messageID": mid,
                      "state": {"status": "completed", "input": {"filePath": "/a"},
                                "output": "ok", "title": "a", "metadata": {},
                                "time": {"start": 1, "end": 2}}})
    parts.append({"type": "step-finish", "reason": "tool-calls", "cost": 0, "tokens": tokens,
                  "id": "prt_99999999999999z", "sessionID": S, "messageID": mid})
    last = assistant("msg_00000000000002", "msg_00000000000000", [
        {"type": "text", "text": "done", "id": "prt_999999999999999", "sessionID": S,
         "messageID": "msg_00000000000002"}])
    msgs = [user("msg_00000000000000"), assistant(mid, "msg_00000000000000", parts), last]
    for m in msgs:  # Anthropic's rules pair a message's calls with the next one's results.
        m["info"].update({"providerID": "anthropic", "modelID": "claude-sonnet-4-5"})
        m["info"].pop("model", None)
        if m["info"]["role"] == "user":
            m["info"]["model"] = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
            m["info"].pop("providerID"); m["info"].pop("modelID")
    export(msgs)
elif kind == "many-files":
    # A folder of many small logs, as `rewind check` meets them in CI.
    import os
    out.close()
    os.remove(path)
    os.makedirs(path)
    for i in range(n):
        with open(f"{path}/run-{i:06d}.log", "w") as f:
            f.write(json.dumps({"type": "step_start", "timestamp": 1, "sessionID": f"ses_{i}",
                                "part": {"id": "prt_1", "sessionID": f"ses_{i}",
                                         "messageID": "msg_1", "type": "step-start"}}) + "\n")
elif kind == "row-issues":
    # One stored part with an issue per item of an array.
    m = user("msg_00000000000000")
    m["parts"].append({"id": "prt_1", "sessionID": S, "messageID": "msg_00000000000000",
                       "type": "patch", "hash": "h", "files": [0] * n})
    export([m])
elif kind in ("repair-db", "repair-db-unindexed"):
    # An OpenCode 1.18 database (the tables tests/common/opencode.rs creates, as OpenCode does)
    # of one session whose event log records every message and part: many steps, each left
    # unclosed. The unindexed one lacks the indexes on `event` a migrated database may lack.
    # Written to PATH.orig and copied to PATH (see repair_fresh).
    import os, sqlite3
    out.close()
    os.remove(path)
    ddl = open("tests/common/opencode.rs").read().split('SCHEMA_CURRENT: &str = r#"')[1].split('"#;')[0]
    if kind == "repair-db-unindexed":
        ddl = "\n".join(l for l in ddl.splitlines() if "ON `event`" not in l)
    c = sqlite3.connect(path + ".orig")
    c.executescript(ddl)
    T0 = 1771000000000
    c.execute("INSERT INTO project VALUES ('prj_1', '/w', 'git', NULL, NULL, NULL, NULL, ?, ?, NULL, '[]', NULL)", (T0, T0))
    c.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'prj_1', 's', '/w', 't', '1.18.33', ?, ?)", (S, T0, T0))
    seq = 0
    def row(table, values, ty, data):
        global seq
        seq += 1
        c.execute(f"INSERT INTO {table} VALUES ({','.join('?' * len(values))})", values)
        c.execute("INSERT INTO event VALUES (?, ?, ?, ?, ?, ?)",
                  (f"evt_{seq:026d}", S, seq, T0 + seq, ty, json.dumps(data)))
    def msg(mid, info, parts, ms):
        row("message", (mid, S, ms, ms, json.dumps(info)), "message.updated.1",
            {"sessionID": S, "info": dict(info, id=mid, sessionID=S)})
        for pid, p in parts:
            row("part", (pid, mid, S, ms, ms, json.dumps(p)), "message.part.updated.1",
                {"sessionID": S, "part": dict(p, id=pid, messageID=mid, sessionID=S), "time": ms})
    u = "msg_00000000000000"
    msg(u, {"role": "user", "time": {"created": T0}, "agent": "build",
            "model": {"providerID": "p", "modelID": "m"}},
        [("prt_0000000000000000", {"type": "text", "text": "go"})], T0)
    for i in range(1, n + 1):
        info = {"role": "assistant", "time": {"created": T0 + i, "completed": T0 + i},
                "parentID": u, "modelID": "m", "providerID": "p", "mode": "build",
                "agent": "build", "path": {"cwd": "/w", "root": "/w"}, "cost": 0,
                "tokens": tokens, "finish": "tool-calls"}
        state = {"status": "completed", "input": {"filePath": "/a"}, "output": "ok",
                 "title": "a", "metadata": {}, "time": {"start": 1, "end": 2}}
        msg(f"msg_{i:014d}", info, [(f"prt_{i:014d}00", {"type": "step-start"}),
            (f"prt_{i:014d}01", {"type": "tool", "callID": f"call_{i:08d}", "tool": "read",
                                 "state": state})], T0 + i)
    c.execute("INSERT INTO event_sequence VALUES (?, ?, NULL)", (S, seq))
    c.commit()
    c.close()
    import shutil
    shutil.copy(path + ".orig", path)
elif kind == "transcript-orphans":
    # A Claude Code transcript of turns each with a result whose call is nowhere (a repair
    # drops them all).
    prev = None
    for i in range(n):
        for t, u, p, content, mid in (
                ("user", f"p{i}", prev, "go", None),
                ("assistant", f"a{i}", f"p{i}", [{"type": "text", "text": "ok"}], f"m{i}"),
                ("user", f"r{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"gone{i}",
                                             "content": "ok"}], None),
                ("assistant", f"b{i}", f"r{i}", [{"type": "text", "text": "ok"}], f"n{i}")):
            m = ({"id": mid, "model": "claude", "content": content} if mid
                 else {"role": t, "content": content})
            w({"type": t, "uuid": u, "parentUuid": p, "sessionId": "s", "message": m})
        prev = f"b{i}"
elif kind == "codex-unanswered-end":
    # A Codex rollout that ends in many calls without output (a repair answers them all).
    w({"timestamp": "t", "type": "session_meta",
       "payload": {"id": "s", "cwd": "/tmp", "cli_version": "0.169.0"}})
    for i in range(n):
        w({"timestamp": "t", "type": "response_item", "payload": {"type": "function_call",
           "name": "shell", "arguments": "{}", "call_id": f"call_{i:08d}"}})
elif kind == "payload-issues":
    # One stream event with an issue per item of an array.
    d({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
       "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]})
    d({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
       "choices": [0] * n})
    out.write("data: [DONE]\n\n")
PY
}

# A repair applied to a fresh copy of the generated file each time (PATH.orig; an applied
# repair leaves nothing to repair), with --force: the file was written moments ago.
repair_fresh() {
  [ -e "$1.orig" ] || cp "$1" "$1.orig"
  cp "$1.orig" "$1" && rm -f "$1".rewind-backup-* && "$bin" repair --force "$1"
}

best() {  # prints the best wall time in seconds of ROUNDS runs of a command (output discarded)
  local b="" t0 t1 s
  for _ in $(seq "$rounds"); do
    t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b-a)/1e9}')
    if [ -z "$b" ] || awk -v x="$s" -v y="$b" 'BEGIN{exit !(x<y)}'; then b=$s; fi
  done
  echo "$b"
}

printf "%-22s %-9s %9s %9s %7s  %s\n" shape command "N" "4N" ratio "(N = $n; linear about 4, quadratic about 16)"
row() {  # kind extension [command words before the file…]
  local kind=$1 ext=$2; shift 2
  if [ -n "${SHAPES:-}" ] && [[ " $SHAPES " != *" $kind "* ]]; then return; fi
  local cmd=("$@")
  [ ${#cmd[@]} -eq 0 ] && cmd=("$bin" diagnose --format json)
  local a="$dir/$kind-1.$ext" b="$dir/$kind-4.$ext"
  generate "$kind" "$n" "$a"
  generate "$kind" "$((n * 4))" "$b"
  local ta tb
  ta=$(best "${cmd[@]}" "$a")
  tb=$(best "${cmd[@]}" "$b")
  local label=${cmd[1]:-}
  [[ " ${cmd[*]} " == *" html "* ]] && label=html
  [[ " ${cmd[*]} " == *" human "* ]] && label=human
  [[ " ${cmd[*]} " == *" --forget-from-parts "* ]] && label=forget-0
  [[ $label == repair && " ${cmd[*]} " != *" --dry-run "* ]] && label=apply
  [[ ${cmd[0]} == repair_fresh ]] && label=apply
  awk -v k="$kind" -v c="$label" -v a="$ta" -v b="$tb" -v s="$(du -h "$b" | cut -f1)" 'BEGIN{
    printf "%-22s %-9s %8.3fs %8.3fs %7.1f  (4N: %s)\n", k, c, a, b, (a > 0 ? b / a : 0), s }'
  rm -rf "$a" "$b" "$dir/$kind"-[14].repaired* "$a".* "$b".*
}
row export-one-line json
row har-one-line har
row har-one-line har "$bin" diagnose --format human
row har-one-line har "$bin" diagnose --format html
row export-turns json
row export-parallel-calls json
row transcript-blocks jsonl
row codex-compacted jsonl
row codex-pairs jsonl
row codex-unanswered jsonl
row stream-json-blocks log
row stream-json-results log
row sse-tools sse
row sse-tools-bad-chunk sse
row sessions-failing log
row sessions-failing log "$bin" sessions
row sessions-crashing log
row zero-usage-steps log
row empty-text-parts log
row empty-text-parts log "$bin" diagnose --format html
row sessions-failing log "$bin" diagnose --format html
row unusable-steps log
# A large log's diagnosis forgets what no rule needs; from the first part here, so that the
# shapes are large enough to forget.
forget=("$bin" diagnose --format json --forget-from-parts 0)
row steps log "${forget[@]}"
row open-tool-then-steps log "${forget[@]}"
row late-writes log "${forget[@]}"
row duplicate-calls log "${forget[@]}"
row sessions-failing log "${forget[@]}"
row sessions-crashing log "${forget[@]}"
row zero-usage-steps log "${forget[@]}"
row empty-text-parts log "${forget[@]}"
row unusable-steps log "${forget[@]}"
row issues-on-one-line log "$bin" diagnose --format human
row parse-errors log
row stitch-parallel jsonl
row transcript-branches jsonl
row transcript-dead-end jsonl
row transcript-resumes jsonl
row many-files d "$bin" check --format json
row repair-unclosed json "$bin" repair --dry-run
row repair-running json "$bin" repair --dry-run
row repair-merged json "$bin" repair --dry-run
# Applying the plans: an export is rewritten whole (searching each change's message and part
# made these quadratic).
row repair-unclosed json "$bin" repair
row repair-running json "$bin" repair
row repair-merged json "$bin" repair
# And to a database, in one transaction that appends an event per change (a query per change
# for the event log's latest entry made the one without indexes quadratic).
row repair-db db "$bin" repair --dry-run
row repair-db db repair_fresh
row repair-db-unindexed db repair_fresh
# And to transcripts, rewritten whole.
row transcript-orphans jsonl repair_fresh
row codex-unanswered-end jsonl repair_fresh
row row-issues json
row payload-issues sse
# What the human output of the issues-on-one-line shape weighs, at 4N: its size, not its time, once grew
# with the square of the issues.
if [ -z "${SHAPES:-}" ] || [[ " $SHAPES " == *" issues-on-one-line "* ]]; then
generate issues-on-one-line "$((n * 4))" "$dir/issues.log"
echo "human output for $((n * 4)) issues on one line: $("$bin" diagnose "$dir/issues.log" | wc -c) bytes"
rm -f "$dir/issues.log"
fi
