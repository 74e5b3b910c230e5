#!/usr/bin/env python3
"""Scripted mock of the Gemini API (generativelanguage v1beta) for Gemini CLI run offline.

Usage: gemini-mock.py --port P --scenario NAME --outdir DIR

Gemini CLI talks to it when started with GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:P and
GEMINI_API_KEY=dummy. Every request is appended to DIR/requests.jsonl (method, path, body) and
every streamed body is saved as DIR/resp-NNN.sse.

Scenarios (main-loop requests: `:streamGenerateContent` with tools):
  healthy    text reply
  tool       turn 1: run_shell_command `echo hi`; after a functionResponse: final text
  kill_tool  turn 1: run_shell_command `sleep 120` (the client is killed meanwhile)
  resume     text reply (a resumed session)
Other requests (`:generateContent`, `:countTokens`, side calls without tools) get short replies.
"""
import argparse, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--scenario", required=True)
ap.add_argument("--outdir", required=True)
ARGS = ap.parse_args()
os.makedirs(ARGS.outdir, exist_ok=True)
LOCK = threading.Lock()
STATE = {"n": 0}
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 5, "totalTokenCount": 105}


def log(obj):
    with LOCK:
        with open(os.path.join(ARGS.outdir, "requests.jsonl"), "a") as f:
            f.write(json.dumps(obj) + "\n")


def next_n():
    with LOCK:
        STATE["n"] += 1
        return STATE["n"]


def candidate(parts, finish=None):
    c = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        c["finishReason"] = finish
    out = {"candidates": [c], "modelVersion": "gemini-mock"}
    if finish:
        out["usageMetadata"] = USAGE
    return out


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        sys.stderr.write("[mock] " + (fmt % a) + "\n")

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        try:
            return json.loads(raw)
        except Exception:
            return raw.decode("utf-8", "replace")

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        n = next_n()
        log({"n": n, "method": "GET", "path": self.path})
        self.send_json(200, {"models": [{"name": "models/gemini-mock"}]})

    def do_POST(self):
        n = next_n()
        body = self.read_body()
        log({"n": n, "t": time.time(), "method": "POST", "path": self.path, "body": body})
        path = self.path.split("?")[0]
        body = body if isinstance(body, dict) else {}
        if path.endswith(":countTokens"):
            return self.send_json(200, {"totalTokens": 100})
        if path.endswith(":generateContent"):
            return self.send_json(200, candidate([{"text": "{}"}], "STOP"))
        if path.endswith(":streamGenerateContent"):
            return self.stream(n, body)
        self.send_json(404, {"error": {"code": 404, "message": "mock: no such endpoint", "status": "NOT_FOUND"}})

    def stream(self, n, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._sse = open(os.path.join(ARGS.outdir, f"resp-{n:03d}.sse"), "wb")
        contents = body.get("contents") or []
        last = contents[-1] if contents else {}
        after_tool = any("functionResponse" in p for p in last.get("parts") or [])
        main = bool(body.get("tools"))
        sc = ARGS.scenario
        if not main or sc in ("healthy", "resume") or after_tool:
            words = ["The tool ", "returned; ", "done."] if after_tool else (
                ["Resumed: ", "I see the earlier ", "conversation."] if sc == "resume" else
                ["Hello! ", "This is the ", "mock model."])
            for w in words[:-1]:
                self.ev(candidate([{"text": w}]))
            self.ev(candidate([{"text": words[-1]}], "STOP"))
            return self.end()
        command = "sleep 120" if sc == "kill_tool" else "echo hi"
        self.ev(candidate([{"text": "Running it."}]))
        self.ev(candidate([{"functionCall": {"name": "run_shell_command",
                                             "args": {"command": command, "description": "a command"}}}], "STOP"))
        self.end()

    def ev(self, obj):
        data = f"data: {json.dumps(obj)}\r\n\r\n".encode()
        self._sse.write(data)
        self._sse.flush()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        time.sleep(0.02)

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._sse.close()


ThreadingHTTPServer(("127.0.0.1", ARGS.port), H).serve_forever()
