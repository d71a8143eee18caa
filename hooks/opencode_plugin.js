// Approval gateway plugin for OpenCode, as printed by
// `gateway hook opencode --plugin`. Save it outside OpenCode's own plugin
// folders (a file there is loaded a second time) and name it in
// opencode.json: "plugin": ["file:///ABSOLUTE/PATH/gateway-opencode.js"].
//
// Before every tool call it asks the gateway (POST $GATEWAY_URL/v1/hooks/opencode
// with $GATEWAY_TOKEN from OpenCode's environment) and lets the call run
// only when the answer is allow. A deny, no answer in time, an unreachable
// gateway, a bad token or any answer it cannot read throws, which blocks
// the call; the model reads the reason as the tool's result. No gateway
// binary is needed on this machine.
//
// GATEWAY_HOOK_WAIT (e.g. "90s", "5m") may shorten how long the gateway
// waits for a person (default: the gateway's [hooks.opencode] wait).

const MAX_WAIT_S = 570 // the gateway waits at most 9m30s
const MARGIN_S = 10

function seconds(s) {
  const m = /^\s*(\d+)\s*(s|m)?\s*$/.exec(s || "")
  if (!m) return 0
  return Number(m[1]) * (m[2] === "m" ? 60 : 1)
}

export const ApprovalGateway = async ({ directory }) => {
  const base = (process.env.GATEWAY_URL || "http://127.0.0.1:8080").replace(/\/+$/, "")
  const token = process.env.GATEWAY_TOKEN || ""
  const wait = Math.min(seconds(process.env.GATEWAY_HOOK_WAIT), MAX_WAIT_S)
  const url = base + "/v1/hooks/opencode" + (wait > 0 ? "?wait=" + wait + "s" : "")
  const limit = ((wait > 0 ? wait : MAX_WAIT_S) + MARGIN_S) * 1000
  return {
    "tool.execute.before": async (input, output) => {
      let answer
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: "Bearer " + token },
          body: JSON.stringify({
            hook_event_name: "tool.execute.before",
            tool: input.tool,
            sessionID: input.sessionID,
            callID: input.callID,
            directory,
            args: output.args,
          }),
          signal: AbortSignal.timeout(limit),
        })
        const text = await res.text()
        if (!res.ok) throw new Error("HTTP " + res.status + ": " + text.slice(0, 300))
        answer = JSON.parse(text)
      } catch (e) {
        throw new Error("approval gateway not consulted: " + String((e && e.message) || e) + "; the call is blocked")
      }
      if (answer && answer.decision === "allow") return
      throw new Error(String((answer && answer.reason) || "approval gateway: no verdict; the call is blocked"))
    },
  }
}
