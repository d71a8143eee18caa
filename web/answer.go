package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
)

// redirect ends a POST: the flash in a cookie, then 303 back to the page
// (so a reload never re-posts), or to the request's own page for a
// decision taken there.
func (w *web) redirect(rw http.ResponseWriter, r *http.Request, f flash) {
	to := "/"
	if b, ok := rw.(backTo); ok {
		rw, to = b.ResponseWriter, b.path
	}
	w.setFlash(rw, r, f)
	http.Redirect(rw, r, to, http.StatusSeeOther)
}

// backTo carries where redirect should return to: always a path on this
// server (/r/{id}, the id path-escaped), never a URL from the form.
type backTo struct {
	http.ResponseWriter
	path string
}

// render executes a template into a buffer first, so a template error is a
// clean 500 rather than half a page, and sets the security headers.
func (w *web) render(rw http.ResponseWriter, r *http.Request, status int, name string, data any) {
	nonce := randomToken(16)
	var buf bytes.Buffer
	if err := w.tmpl.ExecuteTemplate(&buf, name, withNonce{data, nonce}); err != nil {
		w.s.log.Error("web template", "template", name, "err", err)
		http.Error(rw, w.loc.T("web.internal"), http.StatusInternalServerError)
		return
	}
	h := rw.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+nonce+"'; script-src 'nonce-"+nonce+
		"'; connect-src 'self'; img-src data: 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY") // a page of Allow buttons must never be framed (clickjacking)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer Chrome sends
	// "Origin: null" with the page's own forms, which csrf must refuse.
	h.Set("Referrer-Policy", "same-origin")
	rw.WriteHeader(status)
	_, _ = rw.Write(buf.Bytes())
}

// withNonce hands a template its data plus the CSP nonce of the response.
type withNonce struct {
	D     any
	Nonce string
}

// errorPage is the data of error.html.
type errorPage struct {
	Title    string
	Message  string
	Link     string // where to go next, if anywhere: "/" or "/login"
	LinkText string
}

// The links an error page may offer.
const (
	linkNone  = ""
	linkPage  = "/"
	linkLogin = "/login"
	// linkHistory goes back to the History view (web_history.go).
	linkHistory = "/history"
)

// refuse answers a plain explanation page with status.
func (w *web) refuse(rw http.ResponseWriter, r *http.Request, status int, title, msg, link string) {
	p := errorPage{Title: title, Message: msg, Link: link}
	switch link {
	case linkPage:
		p.LinkText = w.loc.T("web.back")
	case linkLogin:
		p.LinkText = w.loc.T("web.log_in_button")
	case linkHistory:
		p.LinkText = w.loc.T("web.history")
	}
	w.render(rw, r, status, "error.html", p)
}

func (w *web) fail(rw http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	w.s.log.Error("web page", "err", err)
	w.refuse(rw, r, http.StatusInternalServerError, w.loc.T("web.failed_title"), w.loc.T("web.failed"), linkPage)
}
