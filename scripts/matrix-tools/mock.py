#!/usr/bin/env python3
"""Scripted mock of the Anthropic Messages API and the OpenAI Responses API.

Usage: mock.py --port P --scenario NAME --outdir DIR [--fail-count N]

Every request is appended to DIR/requests.jsonl (method, path, headers, body
parsed as JSON when possible) and every streamed response body is saved as
DIR/resp-NNN.sse, so the exact bytes the client received are kept.

Scenarios (main-loop requests, i.e. requests that carry tools):
  healthy        text reply
  tool           turn 1: shell tool call; after a tool result: final text
  toolfail       turn 1: read a missing file; after a tool result: final text
  kill_tool      turn 1: shell tool call `sleep 120` (the client is killed meanwhile)
  kill_stream    turn 1: a few text deltas, then the stream hangs (client killed)
  stream_error   the first N main-loop replies end mid-text with an in-band error
                 (Anthropic `event: error` overloaded_error / Responses `response.failed`),
                 later replies are healthy text
  stream_error_tool same, but the error strikes inside a tool_use / function_call item
  resume         text reply (used when a session is resumed)
Side requests (no tools: titles, quota checks, summaries) get a short text reply.
"""
import argparse, json, os, sys, threading, time, uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--scenario", required=True)
ap.add_argument("--outdir", required=True)
ap.add_argument("--fail-count", type=int, default=1)
ap.add_argument("--nonstream-fail", action="store_true", help="answer non-streaming main-loop requests with HTTP 529 overloaded_error")
ARGS = ap.parse_args()
os.makedirs(ARGS.outdir, exist_ok=True)
LOCK = threading.Lock()
STATE = {"n": 0, "main": 0, "failed": 0}
BIG = 10**9


def log(obj):
    with LOCK:
        with open(os.path.join(ARGS.outdir, "requests.jsonl"), "a") as f:
            f.write(json.dumps(obj) + "\n")


def next_n():
    with LOCK:
        STATE["n"] += 1
        return STATE["n"]


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("[mock] " + (fmt % a) + "\n")

    # ---------- plumbing ----------
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = b""
        if n:
            raw = self.rfile.read(n)
        elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "zstd":
            try:
                import zstandard
                raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
            except Exception as e:  # keep raw
                sys.stderr.write(f"[mock] zstd decode failed: {e}\n")
        elif enc == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        try:
            return raw, json.loads(raw)
        except Exception:
            return raw, None

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_mock_{n:03d}")
        self.end_headers()
        self._sse = open(os.path.join(ARGS.outdir, f"resp-{n:03d}.sse"), "wb")

    def chunk(self, data: bytes):
        self._sse.write(data)
        self._sse.flush()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def ev(self, name, obj, delay=0.02):
        if name:
            data = f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode()
        else:
            data = f"data: {json.dumps(obj)}\n\n".encode()
        self.chunk(data)
        time.sleep(delay)

    def end_sse(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._sse.close()

    def hang(self):
        sys.stderr.write("[mock] hanging stream\n")
        try:
            for _ in range(240):
                time.sleep(0.5)
                self.chunk(b": keepalive\n\n") if False else None
        finally:
            self._sse.close()
        self.close_connection = True

    # ---------- routing ----------
    def do_GET(self):
        n = next_n()
        log({"n": n, "t": time.time(), "method": "GET", "path": self.path, "headers": dict(self.headers)})
        if "/models" in self.path:
            return self.send_json(200, {"object": "list", "data": [{"id": "mock-model", "object": "model", "type": "model", "display_name": "Mock"}], "models": [], "has_more": False})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock: no such endpoint"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = next_n()
        raw, body = self.read_body()
        log({"n": n, "t": time.time(), "method": "POST", "path": self.path, "headers": dict(self.headers),
             "body": body if body is not None else raw.decode("utf-8", "replace")})
        p = self.path.split("?")[0]
        if p.endswith("/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": 1234})
        if p.endswith("/messages"):
            return self.anthropic(n, body or {})
        if p.endswith("/responses"):
            return self.openai_responses(n, body or {})
        if p.endswith("/chat/completions"):
            return self.send_json(404, {"error": {"message": "mock: chat completions not scripted"}})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock: no such endpoint"}})

    # ---------- Anthropic ----------
    def anthropic(self, n, body):
        tools = body.get("tools") or []
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        after_tool = False
        if last.get("role") == "user" and isinstance(last.get("content"), list):
            after_tool = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])
        model = body.get("model", "claude-mock")
        if not body.get("stream") and ARGS.nonstream_fail and tools:
            return self.send_json(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": f"req_mock_{n:03d}"})
        if not body.get("stream"):
            text = "mock reply (non-streaming)"
            return self.send_json(200, {"id": f"msg_mock_{n:03d}", "type": "message", "role": "assistant", "model": model,
                                        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                                        "usage": {"input_tokens": 10, "output_tokens": 2}})
        main = len(tools) > 0
        sc = ARGS.scenario
        self.start_sse(n)
        mid = f"msg_mock_{n:03d}"
        self.ev("message_start", {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}})
        if not main:
            return self.a_text(["mock side reply"], final=True)
        with LOCK:
            STATE["main"] += 1
        if sc == "healthy" or sc == "resume" or after_tool:
            if after_tool:
                return self.a_text(["The tool ", "returned; ", "done."], final=True)
            if sc == "resume":
                return self.a_text(["Resumed: ", "I see the earlier ", "conversation."], final=True)
            return self.a_text(["Hello! ", "This is the ", "mock model."], final=True)
        if sc == "subagent":
            names = [t.get("name") for t in tools]
            agent = "Task" if "Task" in names else ("Agent" if "Agent" in names else None)
            in_subagent = "Say hi from the subagent" in json.dumps(msgs[:1])
            if agent and not in_subagent:
                return self.a_tool(agent, {"description": "Greet from a subagent", "prompt": "Say hi from the subagent", "subagent_type": "general-purpose"}, n)
            return self.a_text(["Hi from ", "the subagent."], final=True)
        if sc in ("tool", "kill_tool", "toolfail"):
            names = [t.get("name") for t in tools]
            if sc == "toolfail" and "Read" in names:
                name, inp = "Read", {"file_path": "/home/dev/does-not-exist.txt"}
            elif sc == "kill_tool":
                # MOCK_KILL_CMD: recent Claude Code 2.1.x refuses a command that starts with a long `sleep`
                name, inp = "Bash", {"command": os.environ.get("MOCK_KILL_CMD", "sleep 120"), "description": "Sleep for two minutes"}
            else:
                name, inp = "Bash", {"command": "echo hello-from-tool", "description": "Print a greeting"}
            return self.a_tool(name, inp, n)
        if sc == "kill_stream":
            self.ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            for t in ["I will ", "start ", "answering "]:
                self.ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
            return self.hang()
        if sc in ("stream_error", "stream_error_tool", "stream_error_after_block"):
            with LOCK:
                fail = STATE["failed"] < ARGS.fail_count
                if fail:
                    STATE["failed"] += 1
            if not fail:
                return self.a_text(["Recovered ", "after the ", "error."], final=True)
            if sc == "stream_error_after_block":
                # a complete text block and a complete tool_use block, then the error (no message_delta/stop)
                self.a_text(["Let me run a tool."], final=False, idx=0)
                tid = f"toolu_mock_{n:03d}"
                self.ev("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": tid, "name": "Bash", "input": {}}})
                self.ev("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": json.dumps({"command": "echo hello-from-tool", "description": "Print a greeting"})}})
                self.ev("content_block_stop", {"type": "content_block_stop", "index": 1})
            elif sc == "stream_error":
                self.ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
                for t in ["Partial ", "answer ", "before "]:
                    self.ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
            else:
                self.ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": f"toolu_mock_{n:03d}", "name": "Bash", "input": {}}})
                self.ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"echo "}})
            self.ev("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            return self.end_sse()
        return self.a_text(["unknown scenario"], final=True)

    def a_text(self, parts, final=True, idx=0):
        self.ev("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}})
        for t in parts:
            self.ev("content_block_delta", {"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": t}})
        self.ev("content_block_stop", {"type": "content_block_stop", "index": idx})
        if final:
            self.ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 12}})
            self.ev("message_stop", {"type": "message_stop"})
            self.end_sse()

    def a_tool(self, name, inp, n):
        self.ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        self.ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me run a tool."}})
        self.ev("content_block_stop", {"type": "content_block_stop", "index": 0})
        tid = f"toolu_mock_{n:03d}"
        self.ev("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}})
        js = json.dumps(inp)
        half = len(js) // 2
        for piece in (js[:half], js[half:]):
            self.ev("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}})
        self.ev("content_block_stop", {"type": "content_block_stop", "index": 1})
        self.ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 30}})
        self.ev("message_stop", {"type": "message_stop"})
        self.end_sse()

    # ---------- OpenAI Responses ----------
    def openai_responses(self, n, body):
        tools = body.get("tools") or []
        inp = body.get("input") or []
        last = inp[-1] if inp else {}
        after_tool = isinstance(last, dict) and last.get("type") in ("function_call_output", "custom_tool_call_output")
        model = body.get("model", "mock-model")
        rid = f"resp_mock_{n:03d}"
        sc = ARGS.scenario
        main = len(tools) > 0
        self.start_sse(n)
        self.seq = 0
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model, "status": "in_progress", "output": []}
        self.rev("response.created", {"type": "response.created", "response": base})
        self.rev("response.in_progress", {"type": "response.in_progress", "response": base})
        if main:
            with LOCK:
                STATE["main"] += 1
        if not main or sc in ("healthy", "resume") or after_tool:
            if after_tool:
                return self.r_text(rid, n, "The tool returned; done.")
            if sc == "resume":
                return self.r_text(rid, n, "Resumed: I see the earlier conversation.")
            return self.r_text(rid, n, "Hello! This is the mock model.")
        if sc in ("tool", "kill_tool", "toolfail"):
            names = [t.get("name") for t in tools if isinstance(t, dict)]
            cmd = {"tool": "echo hello-from-tool", "kill_tool": os.environ.get("MOCK_KILL_CMD", "sleep 120"), "toolfail": "cat /home/dev/does-not-exist.txt"}[sc]
            if "shell_command" in names:
                name, args = "shell_command", {"command": cmd}
            elif "exec_command" in names:
                name, args = "exec_command", {"cmd": cmd}
            else:
                name, args = "shell", {"command": ["bash", "-lc", cmd]}
            return self.r_call(rid, n, name, args)
        if sc == "kill_stream":
            self.r_partial_text(rid, n)
            return self.hang()
        if sc in ("stream_error", "stream_error_tool", "stream_error_after_block"):
            with LOCK:
                fail = STATE["failed"] < ARGS.fail_count
                if fail:
                    STATE["failed"] += 1
            if not fail:
                return self.r_text(rid, n, "Recovered after the error.")
            if sc == "stream_error_after_block":
                # a completed function_call item, then response.failed (no response.completed)
                fid, cid = f"fc_mock_{n:03d}", f"call_mock_{n:03d}"
                js = json.dumps({"cmd": "echo hello-from-tool"})
                item = {"type": "function_call", "id": fid, "call_id": cid, "name": "exec_command", "arguments": "", "status": "in_progress"}
                self.rev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
                self.rev("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": 0, "delta": js})
                self.rev("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "item_id": fid, "output_index": 0, "arguments": js})
                self.rev("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": dict(item, arguments=js, status="completed")})
            elif sc == "stream_error":
                self.r_partial_text(rid, n)
            else:
                item = {"type": "function_call", "id": f"fc_mock_{n:03d}", "call_id": f"call_mock_{n:03d}", "name": "shell_command", "arguments": "", "status": "in_progress"}
                self.rev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
                self.rev("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0, "delta": "{\"command\": \"echo "})
            failed = dict(base, status="failed", error={"code": "server_error", "message": "mock: upstream overloaded"})
            self.rev("response.failed", {"type": "response.failed", "response": failed})
            return self.end_sse()
        return self.r_text(rid, n, "unknown scenario")

    def rev(self, name, obj):
        obj["sequence_number"] = self.seq
        self.seq += 1
        self.ev(name, obj)

    def r_partial_text(self, rid, n):
        mid = f"msg_mock_{n:03d}"
        item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
        self.rev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
        self.rev("response.content_part.added", {"type": "response.content_part.added", "item_id": mid, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        for t in ["Partial ", "answer ", "before "]:
            self.rev("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0, "delta": t})

    def usage(self):
        return {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 12,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 112}

    def r_text(self, rid, n, text):
        mid = f"msg_mock_{n:03d}"
        item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
        self.rev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
        self.rev("response.content_part.added", {"type": "response.content_part.added", "item_id": mid, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        words = text.split(" ")
        for i, w in enumerate(words):
            d = w + (" " if i < len(words) - 1 else "")
            self.rev("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0, "delta": d})
        self.rev("response.output_text.done", {"type": "response.output_text.done", "item_id": mid, "output_index": 0, "content_index": 0, "text": text})
        part = {"type": "output_text", "text": text, "annotations": []}
        self.rev("response.content_part.done", {"type": "response.content_part.done", "item_id": mid, "output_index": 0, "content_index": 0, "part": part})
        done = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [part]}
        self.rev("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done})
        resp = {"id": rid, "object": "response", "created_at": int(time.time()), "model": "mock-model", "status": "completed", "output": [done], "usage": self.usage()}
        self.rev("response.completed", {"type": "response.completed", "response": resp})
        self.end_sse()

    def r_call(self, rid, n, name, args):
        fid, cid = f"fc_mock_{n:03d}", f"call_mock_{n:03d}"
        item = {"type": "function_call", "id": fid, "call_id": cid, "name": name, "arguments": "", "status": "in_progress"}
        self.rev("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item})
        js = json.dumps(args)
        half = len(js) // 2
        for piece in (js[:half], js[half:]):
            self.rev("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "item_id": fid, "output_index": 0, "delta": piece})
        self.rev("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "item_id": fid, "output_index": 0, "arguments": js})
        done = dict(item, arguments=js, status="completed")
        self.rev("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done})
        resp = {"id": rid, "object": "response", "created_at": int(time.time()), "model": "mock-model", "status": "completed", "output": [done], "usage": self.usage()}
        self.rev("response.completed", {"type": "response.completed", "response": resp})
        self.end_sse()


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), H)
    srv.daemon_threads = True
    sys.stderr.write(f"[mock] listening on 127.0.0.1:{ARGS.port} scenario={ARGS.scenario} out={ARGS.outdir}\n")
    srv.serve_forever()
