package passkeys

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// BeginLogin starts a sign-in with a discoverable passkey begun from
// source (an address): no user name, the authenticator offers the
// passkeys it holds for this site. Past MaxLoginsPerSource live sign-ins
// of source, or MaxLogins in all, it is refused (ErrTooManyLogins).
func (s *Store) BeginLogin(ctx context.Context, rp RP, source string) (Begun, error) {
	// Read first (again when stored): a flood past the bounds takes no
	// turn at writing from the writes that matter.
	if err := s.loginRoom(ctx, s.db, source, s.now()); err != nil {
		return Begun{}, err
	}
	wa, err := rp.webauthn()
	if err != nil {
		return Begun{}, err
	}
	opts, sess, err := wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return Begun{}, fmt.Errorf("passkey sign-in: %w", err)
	}
	id, err := s.begin(ctx, ceremony{Purpose: purposeLogin, Source: source, Session: *sess})
	if err != nil {
		return Begun{}, err
	}
	return begun(id, opts)
}

// FinishLogin checks a sign-in's assertion and returns the web user whose
// passkey signed it; allowed says whether a web user may still sign in
// (is configured).
func (s *Store) FinishLogin(ctx context.Context, rp RP, id string, credential []byte, allowed func(string) bool) (string, error) {
	c, err := s.take(ctx, id, purposeLogin, "")
	if err != nil {
		return "", err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	var key Passkey
	handler := func(rawID, userHandle []byte) (webauthn.User, error) {
		p, err := s.ByCredentialID(ctx, b64(rawID))
		if err != nil || p.RemovedAt != nil || !bytes.Equal(p.handle, userHandle) || !allowed(p.User) {
			return nil, errors.New("unknown passkey")
		}
		u, err := s.userOf(ctx, p.User)
		if err != nil {
			return nil, err
		}
		key, u.handle = p, p.handle
		return u, nil
	}
	wa, err := rp.webauthn()
	if err != nil {
		return "", err
	}
	if _, err := wa.ValidateDiscoverableLogin(handler, c.Session, parsed); err != nil {
		return "", fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	if err := s.used(ctx, key, parsed.Response.AuthenticatorData.Counter); err != nil {
		return "", err
	}
	return key.User, nil
}
