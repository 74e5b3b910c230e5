#!/usr/bin/env python3
"""The corpus's scripted provider (`tools/mock.py`), with extended thinking on the Anthropic side.

Same arguments as `mock.py`, whose path is given by the MOCK environment variable (default:
../shared/corpus/transcripts/tools/mock.py beside this project). Scenario `thinking_tool`: the
first main-loop reply is a `thinking` block (streamed as `thinking_delta`s and a final
`signature_delta`, as Anthropic streams it), a text block and a Bash `tool_use`; the reply after a
tool result is a `thinking` block and text. `thinking_kill_tool`: the same, with the call
`sleep 120` (for a client killed while the tool runs). `thinking_resume`: a `thinking` block and
text. Other scenarios are mock.py's own. Message and tool ids carry the mock's process id, so a
session resumed against a new mock gets new ones.

Each signature covers the whole response it is part of, and a request whose latest assistant
message holds a signed thinking block no longer matching its message is answered as Anthropic
answers it (400 "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot
be modified"): what public reports of that error show (a `tool_use` removed from a response that
has thinking, a thinking text emptied, the thinking of two responses joined), not a copy of
Anthropic's check.
"""
import base64
import hashlib
import json
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
mock_path = os.environ.get("MOCK") or os.path.join(here, "..", "..", "shared", "corpus", "transcripts", "tools", "mock.py")
mock = runpy.run_path(mock_path, run_name="mock")
H = mock["H"]
ARGS = mock["ARGS"]
# Ids unique to this run of the mock: a resumed session talks to a new one, and Anthropic's
# message and tool ids never repeat.
TAG = f"{os.getpid():x}"


def canonical(blocks):
    """What a signature covers: the blocks of one response, thinking text and all (signatures
    left out)."""
    out = []
    for b in blocks:
        t = b.get("type")
        if t == "thinking":
            out.append(["thinking", b.get("thinking", "")])
        elif t == "redacted_thinking":
            out.append(["redacted_thinking", b.get("data", "")])
        elif t == "text":
            out.append(["text", b.get("text", "")])
        elif t == "tool_use":
            out.append(["tool_use", b.get("id"), b.get("name"), json.dumps(b.get("input"), sort_keys=True)])
        else:
            out.append([t])
    return json.dumps(out, sort_keys=True)


def signature(blocks):
    # Opaque like Anthropic's, and over the whole response: Anthropic refuses a latest assistant
    # message whose signed thinking, or any block of the response around it, was changed.
    digest = hashlib.sha256(canonical(blocks).encode()).digest()
    return base64.b64encode(b"EqQB" + digest * 3).decode()


REFUSAL = ("`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. "
           "These blocks must remain as they were in the original response.")


def refusal(messages):
    """Anthropic's 400 for a latest assistant message that is not a signed response as it was sent."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        if not isinstance(content, list):
            return None
        signed = [k for k, b in enumerate(content) if isinstance(b, dict) and b.get("type") == "thinking" and b.get("signature")]
        if signed and any(content[k]["signature"] != signature(content) for k in signed):
            k = next(k for k in signed if content[k]["signature"] != signature(content))
            return f"messages.{i}.content.{k}: {REFUSAL}"
        return None
    return None


COMMANDS = {
    "thinking_tool": '{"command": "echo hello-from-tool", "description": "Print a greeting"}',
    "thinking_kill_tool": '{"command": "sleep 120", "description": "Sleep for two minutes"}',
}


SCENARIOS = ("thinking_tool", "thinking_kill_tool", "thinking_resume")


class Thinking(H):
    def think(self, idx, text, rest):
        """A thinking block at `idx`, signed over itself and `rest`, the blocks that follow it."""
        self.ev("content_block_start", {"type": "content_block_start", "index": idx,
                                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            self.ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                            "delta": {"type": "thinking_delta", "thinking": piece}})
        sig = signature([{"type": "thinking", "thinking": text}] + rest)
        self.ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                        "delta": {"type": "signature_delta", "signature": sig}})
        self.ev("content_block_stop", {"type": "content_block_stop", "index": idx})

    def anthropic(self, n, body):
        if ARGS.scenario not in SCENARIOS or not body.get("stream") or not body.get("tools"):
            return H.anthropic(self, n, body)
        msgs = body.get("messages") or []
        refused = refusal(msgs)
        if refused:
            return self.send_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": refused},
                                        "request_id": f"req_mock_{n:03d}"})
        last = msgs[-1] if msgs else {}
        after_tool = last.get("role") == "user" and isinstance(last.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"])
        self.start_sse(n)
        self.ev("message_start", {"type": "message_start", "message": {
            "id": f"msg_mock_{TAG}_{n:03d}", "type": "message", "role": "assistant", "model": body.get("model", "claude-mock"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}})
        if ARGS.scenario == "thinking_resume" or after_tool:
            thought, words = (("The session was resumed; I will answer in text.", ["Resumed: ", "I see the earlier ", "conversation."])
                              if ARGS.scenario == "thinking_resume" else
                              ("The tool ran. I can answer now.", ["The tool ", "returned; ", "done."]))
            self.think(0, thought, [{"type": "text", "text": "".join(words)}])
            return self.a_text(words, final=True, idx=1)
        tid = f"toolu_mock_{TAG}_{n:03d}"
        command = COMMANDS[ARGS.scenario]
        self.think(0, "The user wants a greeting from the shell; I will run it.", [
            {"type": "text", "text": "Let me run a tool."},
            {"type": "tool_use", "id": tid, "name": "Bash", "input": json.loads(command)}])
        self.a_text(["Let me run a tool."], final=False, idx=1)
        self.ev("content_block_start", {"type": "content_block_start", "index": 2,
                                        "content_block": {"type": "tool_use", "id": tid, "name": "Bash", "input": {}}})
        self.ev("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {
            "type": "input_json_delta", "partial_json": command}})
        self.ev("content_block_stop", {"type": "content_block_stop", "index": 2})
        self.ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                  "usage": {"output_tokens": 30}})
        self.ev("message_stop", {"type": "message_stop"})
        self.end_sse()


if __name__ == "__main__":
    srv = mock["ThreadingHTTPServer"](("127.0.0.1", ARGS.port), Thinking)
    srv.daemon_threads = True
    sys.stderr.write(f"[thinking-mock] listening on 127.0.0.1:{ARGS.port} scenario={ARGS.scenario}\n")
    srv.serve_forever()
