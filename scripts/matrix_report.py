#!/usr/bin/env python3
"""Diagnose every recording of tests/fixtures/matrix with a rewind binary and print what it said.

Usage: matrix_report.py REWIND [MATRIX_DIR]

For each <client>/<version>/<scenario>/ it runs `rewind diagnose --format json` on every transcript
(Claude Code's *.jsonl, Codex's rollout-*.jsonl; never requests.jsonl) and prints one line per file:
the format rewind read it as, the counts of errors/warnings/infos, and each finding (rule, severity,
line, message). A file rewind refuses is printed with its error. Then, for the kill scenarios with a
resume recording next to them, `rewind request --format json` on the pre-resume transcript is compared
with the request the client really sent on resume (requests.jsonl of resume_*: the last main-loop
request, i.e. the last one carrying tools), by the sequence of (role, block types, tool ids).
"""
import json, os, subprocess, sys

RW = sys.argv[1]
ROOT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "matrix")


def transcripts(d):
    """Claude Code transcripts, Codex rollouts, OpenCode stores (opencode.sql dump or storage/ folder)."""
    out = []
    if os.path.isdir(os.path.join(d, "storage")):
        out.append(os.path.join(d, "storage"))
    for dp, _ds, fs in os.walk(d):
        if "/storage" in dp:
            continue
        for f in sorted(fs):
            if (f.endswith(".jsonl") and f != "requests.jsonl") or f == "opencode.sql":
                out.append(os.path.join(dp, f))
    return sorted(out)


def diagnose(f):
    p = subprocess.run([RW, "diagnose", "--color", "never", "--format", "json", f], capture_output=True, text=True)
    try:
        d = json.loads(p.stdout)
    except Exception:
        return {"refused": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["rc %d" % p.returncode]}
    fmt = [x.get("format") for x in d.get("files", [])]
    return {"format": fmt, "summary": d.get("summary"), "errors": d.get("errors"),
            "findings": [(x["rule"], x["severity"], x.get("line"), x["message"]) for x in d.get("findings", [])]}


def collapse(seq):
    """[(role, [kinds])] -> same, system messages dropped, consecutive same-role messages merged and
    repeated text kinds collapsed: a shape that ignores how many reminder/context texts a client adds."""
    out = []
    for role, kinds in seq:
        if role == "system":
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, out[-1][1] + kinds)
        else:
            out.append((role, list(kinds)))
    res = []
    for role, kinds in out:
        k2 = []
        for k in kinds:
            if not (k2 and k2[-1] == k == "text"):
                k2.append(k)
        res.append((role, k2))
    return res


def real_shape(body):
    seq = []
    if "messages" in body:
        for m in body["messages"]:
            c = m.get("content")
            kinds = []
            if m.get("role") == "tool":  # Chat Completions
                seq.append(("tool", ["tool_result:" + m.get("tool_call_id", "")]))
                continue
            for tc in m.get("tool_calls") or []:
                kinds.append("tool_use:" + tc.get("id", ""))
            if c in (None, ""):
                c = []
            for b in ([{"type": "text"}] if isinstance(c, str) else c):
                t = b.get("type")
                if t == "text" and kinds and kinds[-1].startswith("tool_use"):
                    kinds.insert(0, t)
                    continue
                if t == "tool_use":
                    t += ":" + b.get("id", "")
                elif t == "tool_result":
                    t += ":" + b.get("tool_use_id", "")
                kinds.append(t)
            seq.append((m["role"], kinds))
    else:
        for it in body["input"]:
            t = it.get("type")
            if t == "message" or (t is None and "role" in it):
                role = {"developer": "system"}.get(it.get("role"), it.get("role"))
                seq.append((role, ["text"]))
            elif t in ("function_call", "custom_tool_call"):
                seq.append(("assistant", ["tool_use:" + it.get("call_id", "")]))
            elif t in ("function_call_output", "custom_tool_call_output"):
                seq.append(("tool", ["tool_result:" + it.get("call_id", "")]))
            elif t == "reasoning":
                seq.append(("assistant", ["reasoning"]))
            else:
                seq.append(("?", [t]))
    # the prompt typed on resume ("Continue please") is not in the pre-resume transcript (nor the system
    # messages a client puts after it, e.g. Claude Code's <total_tokens> reminder)
    while seq and seq[-1][0] == "system":
        seq.pop()
    if seq and seq[-1][0] == "user" and seq[-1][1] and seq[-1][1][-1] == "text":
        seq[-1] = ("user", seq[-1][1][:-1])
        if not seq[-1][1]:
            seq.pop()
    return collapse(seq)


def rebuilt_shape(rebuilt):
    seq = []
    for m in rebuilt.get("messages", []):
        kinds = []
        for b in m.get("blocks", []):
            t = b.get("type")
            if t in ("tool_use", "tool_result"):
                t += ":" + (b.get("id") or "")
            kinds.append(t)
        seq.append((m["role"], kinds))
    return collapse(seq)


def last_main_request(reqfile):
    last = None
    for line in open(reqfile):
        o = json.loads(line)
        b = o.get("body")
        if isinstance(b, dict) and b.get("tools") and ("messages" in b or "input" in b):
            last = b
    return last


def fmt(shape):
    return " | ".join(f"{r}[{','.join(k)}]" for r, k in shape)


def compare(kill_file, resume_dir):
    reqfile = os.path.join(resume_dir, "requests.jsonl")
    if not os.path.exists(reqfile):
        return "no requests.jsonl in the resume recording"
    real = last_main_request(reqfile)
    if real is None:
        return "the resume sent no main-loop request"
    p = subprocess.run([RW, "request", "--format", "json", kill_file], capture_output=True, text=True)
    try:
        rebuilt = json.loads(p.stdout)
    except Exception:
        return "rewind request refused: " + " ".join((p.stderr or p.stdout).strip().splitlines()[-2:])
    a, b = rebuilt_shape(rebuilt), real_shape(real)
    verdict = "SAME" if a == b else "DIFFERENT"
    return f"{verdict}\n      rebuilt: {fmt(a)}\n      sent:    {fmt(b)}" + (
        f"\n      rewind's problems: {rebuilt.get('problems')}" if rebuilt.get("problems") else "")


def requests_section():
    print("\n# rewind request on the pre-resume transcript vs the request the client sent on resume")
    for client in sorted(os.listdir(ROOT)):
        cdir = os.path.join(ROOT, client)
        if not os.path.isdir(cdir):
            continue
        for ver in sorted(os.listdir(cdir), key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")]):
            vdir = os.path.join(cdir, ver)
            for sc in sorted(os.listdir(vdir)) if os.path.isdir(vdir) else []:
                if not sc.startswith("resume_after_"):
                    continue
                kill = os.path.join(vdir, sc[len("resume_after_"):])
                main_ts = [f for f in transcripts(kill) if not os.path.basename(f).startswith("agent-")
                           and (os.path.isdir(f) or os.path.getsize(f))]
                if not main_ts:
                    print(f"{client} {ver} {sc}: no pre-resume transcript")
                    continue
                print(f"{client} {ver} {sc}: {compare(main_ts[0], os.path.join(vdir, sc))}")


def main():
    for client in sorted(os.listdir(ROOT)):
        cdir = os.path.join(ROOT, client)
        if not os.path.isdir(cdir):
            continue
        for ver in sorted(os.listdir(cdir), key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")]):
            vdir = os.path.join(cdir, ver)
            if not os.path.isdir(vdir):
                continue
            for sc in sorted(os.listdir(vdir)):
                sdir = os.path.join(vdir, sc)
                if not os.path.isdir(sdir):
                    continue
                fs = transcripts(sdir)
                if not fs:
                    print(f"{client} {ver} {sc}: no transcript on disk")
                for f in fs:
                    r = diagnose(f)
                    name = os.path.relpath(f, sdir)
                    if "refused" in r:
                        print(f"{client} {ver} {sc} {name}: REFUSED {r['refused']}")
                        continue
                    s = r["summary"] or {}
                    print(f"{client} {ver} {sc} {name}: format={r['format']} E{s.get('errors')} W{s.get('warnings')} I{s.get('infos')}"
                          + (f" errors={r['errors']}" if r["errors"] else ""))
                    for rule, sev, line, msg in r["findings"]:
                        print(f"    {sev} {rule} line {line}: {msg}")
    requests_section()


if __name__ == "__main__":
    main()
