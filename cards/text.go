package cards

import "strings"

// StepUpLine is what a step-up card says above its buttons: allowing
// needs the passkey on the web page, and the page's address when the card
// cannot carry it as a link button.
func StepUpLine(c Card) string {
	if c.ConfirmButton() {
		return c.Locale.T("card.step_up")
	}
	return c.Locale.T("card.step_up") + " " + c.Locale.T("card.step_up_link", c.ConfirmURL)
}

// OneLine folds line breaks into spaces: a field that is not a command
// must not be able to forge extra lines ("Vaglio: score 1.00") on the card.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// UTF16Len is the length of s in UTF-16 code units, which is how some
// messengers count their text limits.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s { // an invalid byte decodes as one U+FFFD: one unit
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// More is the mark of a list cut short: "+" after its count.
func More(b bool) string {
	if b {
		return "+"
	}
	return ""
}
