package schema

import (
	"testing"
	"time"
)

// TestParseReaderDate: the DATE texts of a JSON or CSV file as Spark's readers read them without
// a dateFormat (DateTimeUtils.stringToDate, the cases of Spark's DateTimeUtilsSuite): a year
// of 4 to 7 digits, a month and a day of 1 or 2, what follows a space or a T after the day
// ignored, a year or a year and month their first day, control characters around it trimmed and
// "GMT" removed on a second try (cleanLegacyTimestampStr); anything else, or a day that does not
// exist, refused.
func TestParseReaderDate(t *testing.T) {
	t.Parallel()
	day := func(y int, m time.Month, d int) Date {
		return Date(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	}
	ok := map[string]Date{
		"2015-01-28":           day(2015, 1, 28),
		"2015":                 day(2015, 1, 1),
		"0001":                 day(1, 1, 1),
		"2015-03":              day(2015, 3, 1),
		"2015-3-1":             day(2015, 3, 1),
		"2015-03-18 123142":    day(2015, 3, 18),
		"2015-03-18T123123":    day(2015, 3, 18),
		"2015-03-18T":          day(2015, 3, 18),
		"2024-01-31T10:00:00Z": day(2024, 1, 31),
		"2024-03-04 extra":     day(2024, 3, 4),
		"02015-03-18":          day(2015, 3, 18),
		"02015":                day(2015, 1, 1),
		" 2015-03-18\t":        day(2015, 3, 18),
		"+2015-03-18":          day(2015, 3, 18),
		"2024-02-29":           day(2024, 2, 29),
		"1969-12-31":           -1,
		// trimAll: control characters around the text, 0x7F among them.
		"\x7f2015-03-18\x00": day(2015, 3, 18),
		"\x1f2015-03-18\x7f": day(2015, 3, 18),
		// cleanLegacyTimestampStr: read again with every "GMT" removed.
		"GMT2015-03-18":    day(2015, 3, 18),
		"2015-03-GMT18":    day(2015, 3, 18),
		"2015-03-18GMT":    day(2015, 3, 18),
		"2015-03-18 GMT+1": day(2015, 3, 18),
	}
	for text, want := range ok {
		if got, err := ParseReaderDate(text); err != nil || got != want {
			t.Errorf("ParseReaderDate(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, text := range []string{"", "2015-03-18X", "2015/03/18", "2015.03.18", "20150318", "2015-031-8",
		"015-03-18", "015", "1999 08 01", "1999-08 01", "2015-02-29", "2015-13-01", "2015-00-10", "2015-01-32", "2015-01-", "x2015", "GMX2015-03-18", "2015-03-18gmt"} {
		if got, err := ParseReaderDate(text); err == nil {
			t.Errorf("ParseReaderDate(%q) = %d, want an error", text, got)
		}
	}
}
