//go:build soak

package soak

import "testing"

// The three scenarios of issue 7, in order. They run one after the other
// (never in parallel): the load figures are the gateway's alone, and the
// outage scenario's goleak check sees only its own goroutines.

// TestSoak_Load: 1,000 agents, 10,000 requests over 5 minutes, a third
// answered by a scripted person through the fake Telegram and Slack.
func TestSoak_Load(t *testing.T) { runLoad(t) }

// TestSoak_KillRestart: kill -9 of the gateway at random moments, 10
// times, with hundreds of requests pending.
func TestSoak_KillRestart(t *testing.T) { runKillRestart(t) }

// TestSoak_MessengerOutage: both fakes down (500s, hangs) for 60 s, then
// 429 storms; every card arrives afterwards, nothing is lost or leaked.
func TestSoak_MessengerOutage(t *testing.T) { runOutage(t) }
