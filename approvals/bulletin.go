package approvals

import "context"

// Bulletin is a plain message to the people on a messenger that is no
// request and decides nothing: a passkey added or removed. Key names its
// sentence in the locale; Args fill the sentence's %s, in order, and are
// people's or agents' strings (a passkey's name, a user's): a messenger
// shows each as it shows a card's target (escaped, in a code span where it
// has one).
type Bulletin struct {
	Key  string
	Args []string
}

// BulletinSender is implemented by a Notifier that can post a bulletin on
// its messenger (one attempt: its caller retries).
type BulletinSender interface {
	SendBulletin(ctx context.Context, b Bulletin) error
}
