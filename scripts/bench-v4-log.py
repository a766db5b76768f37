# A V3 log rewritten as V4 for benchmarks (docs/measurements.md §9): header version 4, tool
# results lifted to tool-role messages, plugin sources renamed as docs/format-v4.md §2 says.
# Not the migration edge (no interrupted-turn insertion, no catalog completion, no refusals):
# a V4 log of the same conversation, to compare V4's reading cost with V3's.
# Usage: python3 scripts/bench-v4-log.py IN.v3.jsonl OUT.v4.jsonl
import json, sys
RENAME = {"compact": "compact-checkpoint", "tools-code-mode": "ptc-mode", "tools-ptc": "ptc-mode",
          "dsh-compaction-basic": "compact-basic"}
SAME = set("agent-instructions session-reference team-message goal skill-invocation skill-catalog coordinator subagent-report subagent-settled webhook agent-message model-selection plan-mode time-context tmux-context user-approval repeat-tool-reminder tool-cordis cordis-host-runner tool-goal tool-jobs hooks-codex hooks-claude-code schedule dsh-session-title-llm".split())
def source(src, role):
    if not isinstance(src, dict) or src.get("kind") != "plugin":
        return src
    p = src.get("plugin")
    if p == "@deepseek-ai/dsh-system-prompt":
        kind = "system-prompt" if role == "system" else "runtime-context"
    elif p in RENAME: kind = RENAME[p]
    elif p in SAME: kind = p
    else: kind = "plugin:" + p
    out = {}
    for k, v in src.items():
        if k == "plugin": continue
        out[k] = kind if k == "kind" else v
    return out
def lift(msg):
    block = msg["content"][0]
    out = {"role": "tool", "source": msg["source"], "toolCallId": block["toolCallId"], "content": block.get("content", [])}
    if "isError" in block: out["isError"] = block["isError"]
    out["id"] = msg["id"]
    for k, v in msg.items():
        if k not in ("id", "role", "source", "content"): out["plugin:message:" + k] = v
    for k, v in block.items():
        if k not in ("type", "toolCallId", "content", "isError"): out["plugin:result:" + k] = v
    return out
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f, open(dst, "w") as o:
    header = json.loads(f.readline()); header["version"] = 4
    o.write(json.dumps(header, separators=(",", ":"), ensure_ascii=False) + "\n")
    for line in f:
        e = json.loads(line)
        t, d = e["type"], e.get("data")
        if t == "user/message": d["source"] = source(d.get("source"), "user")
        elif t in ("system/message", "assistant/message") and isinstance(d.get("message"), dict):
            d["message"]["source"] = source(d["message"].get("source"), d["message"].get("role"))
        elif t == "tool/result":
            d["message"] = lift(d["message"])
        elif t == "session/title-llm-request":
            for m in d.get("messages", []): m["source"] = source(m.get("source"), m.get("role"))
        o.write(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n")
