package locale

// en is the English catalog. Keys are grouped by surface; values are fmt
// formats, and the Italian catalog must have the same keys with the same
// verbs (TestCatalogs).
var en = map[string]string{
	// Times.
	"time.expires_in":   "expires %s, %s",
	"time.expired_at":   "expired at %s",
	"time.in_s":         "in %d s",
	"time.in_min":       "in %d min",
	"time.in_h_min":     "in %d h %d min",
	"time.in_days":      "in %d days",
	"time.now":          "now",
	"time.weekdays.mon": "Mon",
	"time.weekdays.tue": "Tue",
	"time.weekdays.wed": "Wed",
	"time.weekdays.thu": "Thu",
	"time.weekdays.fri": "Fri",
	"time.weekdays.sat": "Sat",
	"time.weekdays.sun": "Sun",
	"time.months.jan":   "Jan",
	"time.months.feb":   "Feb",
	"time.months.mar":   "Mar",
	"time.months.apr":   "Apr",
	"time.months.may":   "May",
	"time.months.jun":   "Jun",
	"time.months.jul":   "Jul",
	"time.months.aug":   "Aug",
	"time.months.sep":   "Sep",
	"time.months.oct":   "Oct",
	"time.months.nov":   "Nov",
	"time.months.dec":   "Dec",
}
