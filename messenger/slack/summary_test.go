package slack_test

import (
	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/slack"
)

var _ approvals.Summarizer = (*slack.Messenger)(nil)
