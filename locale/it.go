package locale

// it is the Italian catalog: the same keys as en, the same fmt verbs.
var it = map[string]string{
	// Orari.
	"time.expires_in":   "scade %s, %s",
	"time.expired_at":   "scaduta alle %s",
	"time.in_s":         "tra %d s",
	"time.in_min":       "tra %d min",
	"time.in_h_min":     "tra %d h %d min",
	"time.in_days":      "tra %d giorni",
	"time.now":          "ora",
	"time.weekdays.mon": "lun",
	"time.weekdays.tue": "mar",
	"time.weekdays.wed": "mer",
	"time.weekdays.thu": "gio",
	"time.weekdays.fri": "ven",
	"time.weekdays.sat": "sab",
	"time.weekdays.sun": "dom",
	"time.months.jan":   "gen",
	"time.months.feb":   "feb",
	"time.months.mar":   "mar",
	"time.months.apr":   "apr",
	"time.months.may":   "mag",
	"time.months.jun":   "giu",
	"time.months.jul":   "lug",
	"time.months.aug":   "ago",
	"time.months.sep":   "set",
	"time.months.oct":   "ott",
	"time.months.nov":   "nov",
	"time.months.dec":   "dic",
}
