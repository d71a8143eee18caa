// Package soak is the gateway's soak and fault suite (issue 7): load from
// 1,000 agents with people answering through the fake Telegram and Slack,
// kill -9 of the server with hundreds of requests pending, a messenger
// outage followed by 429 storms, and a grep of every log for secrets.
//
// The tests only build with the soak tag, so `make test` never runs them:
//
//	make soak    # go test -tags soak -run . -count=1 -timeout 30m -v ./soak/
//
// Everything runs on loopback (127.0.0.1) against the fakes in
// messenger/telegram/telegramtest and messenger/slack/slacktest, every loop is
// bounded, and the run ends with a summary table for the README.
// SOAK_AGENTS, SOAK_REQUESTS, SOAK_DURATION, SOAK_KILLS, SOAK_OUTAGE and
// SOAK_STORM shrink or grow it; SOAK_REPORT names a file that receives
// the summary too.
package soak
