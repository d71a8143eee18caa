package cards

// Markup is how a messenger writes the text of a neutral message (a
// digest, a notification): Escape the gateway's own words and an agent's
// that are not set apart, Code an agent string set apart (a target), Link
// the web page's link. Each messenger has its own; Plain writes the text
// as it is.
type Markup interface {
	Escape(s string) string
	Code(s string) string
	Link(u string) string
}

// Plain is the Markup of plain text: every string as it is.
var Plain Markup = plainMarkup{}

type plainMarkup struct{}

func (plainMarkup) Escape(s string) string { return s }
func (plainMarkup) Code(s string) string   { return s }
func (plainMarkup) Link(u string) string   { return u }
