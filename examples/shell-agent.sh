#!/bin/sh
# shell-agent.sh: a shell agent that asks the approval gateway before it
# runs a command, with nothing but curl and jq.
#
#   make run                                   # in one terminal; it prints the export line
#   export GATEWAY_URL=http://127.0.0.1:8080 GATEWAY_TOKEN=gw_…
#   examples/shell-agent.sh npm install        # asks, waits for your tap, runs it if allowed
#   examples/shell-agent.sh --events           # follow the agent's event stream (SSE)
#
# Exit status: the command's own when allowed; 1 denied, expired or no
# answer in time (the request is then withdrawn); 2 gateway error.
# WAIT (default 600, seconds) is how long to wait for a person.
#
# The token never appears on a command line (where ps would show it): curl
# reads the Authorization header from its stdin config.
set -eu

: "${GATEWAY_URL:?set GATEWAY_URL, e.g. http://127.0.0.1:8080 (make run prints it)}"
: "${GATEWAY_TOKEN:?set GATEWAY_TOKEN, the agent token (make run prints it)}"
WAIT=${WAIT:-600}

# api METHOD PATH [BODY]: one call; prints the body; fails on no answer.
api() {
	printf 'header = "Authorization: Bearer %s"\n' "$GATEWAY_TOKEN" |
		curl --silent --show-error --config - -X "$1" "$GATEWAY_URL$2" \
			-H 'Content-Type: application/json' ${3:+--data "$3"}
}

if [ "${1:-}" = "--events" ]; then
	# Server-Sent Events: "event: approval_required" / "data: {…}" pairs.
	printf 'header = "Authorization: Bearer %s"\n' "$GATEWAY_TOKEN" |
		curl --silent --no-buffer --config - "$GATEWAY_URL/v1/events" |
		while IFS= read -r line; do
			case $line in
			event:*) kind=${line#event: } ;;
			data:*) printf '%s %s\n' "$kind" "$(printf '%s' "${line#data: }" | jq -c .)" ;;
			esac
		done
	exit 0
fi

[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG…] | --events" >&2; exit 2; }
cmd=$*

body=$(jq -n --arg cmd "$cmd" --arg cwd "$PWD" --arg call "shell-$$-$(date +%s)" '{
	call_id: $call, capability: "code:exec", target: $cmd,
	intent: "run a command for the shell agent", executor: "shell-agent",
	summary: ("shell agent in " + $cwd)
}')

# Post; the gateway answers at once when policy decides, else within 30 s
# with the request still pending (HTTP 202).
r=$(api POST "/v1/requests?wait=30s" "$body") || exit 2
if [ "$(printf '%s' "$r" | jq -r 'has("error")')" = true ]; then
	echo "gateway: $(printf '%s' "$r" | jq -r '.error.message')" >&2
	exit 2
fi
id=$(printf '%s' "$r" | jq -r .id)
status=$(printf '%s' "$r" | jq -r .status)
deadline=$(($(date +%s) + WAIT))

# Long-poll until a person decides or WAIT runs out.
while [ "$status" = pending ]; do
	left=$((deadline - $(date +%s)))
	if [ "$left" -le 0 ]; then
		api DELETE "/v1/requests/$id" >/dev/null || true
		echo "no answer within ${WAIT}s; request $id withdrawn" >&2
		exit 1
	fi
	echo "waiting for approval of: $cmd (request $id, expires $(printf '%s' "$r" | jq -r .expires_at))" >&2
	[ "$left" -gt 50 ] && left=50
	r=$(api GET "/v1/requests/$id?wait=${left}s") || exit 2
	status=$(printf '%s' "$r" | jq -r .status)
done

case $status in
allowed)
	echo "allowed $(printf '%s' "$r" | jq -r 'if (.decided_by // "") != "" and .decided_by != "policy" then "by " + .decided_by else .reason end'); running: $cmd" >&2
	exec sh -c "$cmd"
	;;
*)
	echo "$status: $(printf '%s' "$r" | jq -r 'if (.decided_by // "") != "" and .decided_by != "policy" then "by " + .decided_by else .reason end')" >&2
	note=$(printf '%s' "$r" | jq -r '.note // ""')
	[ -z "$note" ] || echo "note from the owner: $note" >&2
	exit 1
	;;
esac
