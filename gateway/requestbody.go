package gateway

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// decodeRequestBody is decodeJSON for a requestBody, with the same
// answers for every body. The body is read whole first; the common shape
// (string fields without escapes, flat objects of such strings for args
// and context, no repeated field) is read in one pass without reflection,
// its strings cut from one copy of the body. Anything else is decoded by
// decodeJSON's encoding/json from the same bytes, followed by the read's
// own error if it had one, so that it answers what it answered before.
// TestFastRequestBody_AsEncodingJSON and FuzzFastRequestBody hold the fast
// pass to encoding/json's result wherever it takes a body.
func decodeRequestBody(w http.ResponseWriter, r *http.Request, b *requestBody) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	bp := bodyBufs.Get().(*[]byte)
	buf, err := readBody((*bp)[:0], r.Body)
	defer func() {
		if cap(buf) <= MaxBodyBytes+bytes.MinRead {
			*bp = buf[:0]
			bodyBufs.Put(bp)
		}
	}()
	if err == nil && fastRequestBody(string(buf), b) {
		return true
	}
	*b = requestBody{}
	var body io.Reader = bytes.NewReader(buf)
	if err != nil {
		body = io.MultiReader(body, failingReader{err})
	}
	return decodeFrom(w, body, b)
}

// bodyBufs are decodeRequestBody's buffers.
var bodyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// readBody appends what body holds to b, until its end (nil) or an error.
func readBody(b []byte, body io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// failingReader gives back a read's error after the bytes read before it.
type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// fastRequestBody reads s into b when it has the common shape (see
// decodeRequestBody); false leaves b partly set, for encoding/json to
// decode again from scratch.
func fastRequestBody(s string, b *requestBody) bool {
	p := bodyParser{s: s}
	p.space()
	if !p.take('{') {
		return false
	}
	p.space()
	if p.take('}') {
		return p.end()
	}
	var seen uint32
	for {
		key, ok := p.plainString()
		if !ok {
			return false
		}
		p.space()
		if !p.take(':') {
			return false
		}
		p.space()
		f := requestField(key)
		if f < 0 || seen&(1<<f) != 0 {
			return false // unknown, another case, or repeated: encoding/json's to answer
		}
		seen |= 1 << f
		if f == fieldArgs || f == fieldContext {
			m, ok := p.flatObject()
			if !ok {
				return false
			}
			if f == fieldArgs {
				b.Args = m
			} else {
				b.Context = m
			}
		} else {
			v, ok := p.plainString()
			if !ok {
				return false
			}
			*b.stringField(f) = v
		}
		p.space()
		if p.take('}') {
			return p.end()
		}
		if !p.take(',') {
			return false
		}
		p.space()
	}
}

// The fields fastRequestBody reads that are not plain strings.
const (
	fieldArgs = iota
	fieldContext
	fieldTimeout // timeout_s, a number: always encoding/json's
	firstStringField
)

// requestStringFields are requestBody's string fields, by JSON name,
// numbered from firstStringField in this order.
var requestStringFields = []string{"call_id", "capability", "target", "autonomy", "channel", "sender_id",
	"session_id", "intent", "executor", "summary", "grant_target", "callback_url"}

// requestField numbers a JSON key as fastRequestBody knows it: -1 for a
// key it leaves to encoding/json.
func requestField(key string) int {
	switch key {
	case "args":
		return fieldArgs
	case "context":
		return fieldContext
	}
	for i, k := range requestStringFields {
		if k == key {
			return firstStringField + i
		}
	}
	return -1
}

// stringField is the field numbered f (a requestStringFields one).
func (b *requestBody) stringField(f int) *string {
	return [...]*string{&b.CallID, &b.Capability, &b.Target, &b.Autonomy, &b.Channel, &b.SenderID,
		&b.SessionID, &b.Intent, &b.Executor, &b.Summary, &b.GrantTarget, &b.CallbackURL}[f-firstStringField]
}

// bodyParser reads fastRequestBody's shape from s.
type bodyParser struct {
	s string
	i int
}

func (p *bodyParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *bodyParser) take(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end: nothing but white space after the object.
func (p *bodyParser) end() bool {
	p.space()
	return p.i == len(p.s)
}

// plainString reads a JSON string of printable ASCII without escapes,
// which is its own text.
func (p *bodyParser) plainString() (string, bool) {
	if !p.take('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.s[start : p.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return "", false
		}
		p.i++
	}
	return "", false
}

// flatObject reads an object whose values are all plain strings.
func (p *bodyParser) flatObject() (map[string]any, bool) {
	if !p.take('{') {
		return nil, false
	}
	m := map[string]any{}
	p.space()
	if p.take('}') {
		return m, true
	}
	for {
		k, ok := p.plainString()
		if !ok {
			return nil, false
		}
		p.space()
		if !p.take(':') {
			return nil, false
		}
		p.space()
		v, ok := p.plainString()
		if !ok {
			return nil, false
		}
		m[k] = v
		p.space()
		if p.take('}') {
			return m, true
		}
		if !p.take(',') {
			return nil, false
		}
		p.space()
	}
}
