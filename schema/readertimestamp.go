package schema

import (
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // region zones read alike where the machine has no time zone database
)

// This file is ParseReaderTimestamp's scanner: Spark's DateTimeUtils.stringToTimestamp
// (SparkDateTimeUtils.parseTimestampString and getZoneId) for the TIMESTAMP text of a JSON or
// CSV file, in the session time zone UTC.

// timestampFault says why text is no TIMESTAMP of a file; faultNone: it is one.
type timestampFault uint8

const (
	faultNone      timestampFault = iota
	faultSyntax                   // not of a form Spark reads
	faultNoSuchDay                // a month, day, hour, minute or second out of its range
	faultZone                     // a zone Spark does not know, or that Go cannot load
	faultTimeOnly                 // a time of day without a date: today's, in Spark
	faultRange                    // outside the years 1 to 9999
	faultZoneEarly                // a zone after the hours or minutes, where Spark takes one only after the seconds
)

// readerTimestampError is ParseReaderTimestamp's error: text is the value, zone its zone text
// when the zone is the fault.
type readerTimestampError struct {
	text, zone string
	fault      timestampFault
}

func (e readerTimestampError) Error() string {
	switch e.fault {
	case faultNoSuchDay:
		return fmt.Sprintf("%q is not a timestamp: that day or time of day does not exist", e.text)
	case faultZone:
		return fmt.Sprintf("%q has time zone %q, which is not Z, an offset (+01:00), UTC or GMT with an offset (GMT+1), a short id (PST) or a region of the IANA time zone database (Europe/Paris)", e.text, strings.TrimSpace(e.zone))
	case faultZoneEarly:
		return fmt.Sprintf("%q is not a timestamp: its time zone follows the hours or minutes, and Spark's readers take one only after the seconds (write 2024-01-31T10:00:00Z, 2024-01-31 10:00:00+01:00)", e.text)
	case faultTimeOnly:
		return fmt.Sprintf("%q is a time of day without a date, which Spark's readers take as the day the query runs, so that a run on another day would read another value: write the date (e.g. 2024-01-31T10:00:00Z)", e.text)
	case faultRange:
		return fmt.Sprintf("%q is outside the years 1 to 9999 that a TIMESTAMP holds", e.text)
	}
	return fmt.Sprintf("%q is not a timestamp (e.g. 2024-01-31T10:00:00Z, as Spark's readers read one)", e.text)
}

// isSparkSpace reports whether Spark's string-to-datetime parsers trim byte c from either end of
// the text (UTF8String.isWhitespaceOrISOControl on a byte: white space and ISO controls).
func isSparkSpace(c byte) bool { return c <= ' ' || c == 0x7f }

// timestampDigits reports whether n digits make segment seg of a timestamp text: a year of 4 to
// 6 digits, a fraction of any number, the others 1 or 2.
func timestampDigits(seg, n int) bool {
	switch seg {
	case 0:
		return n >= 4 && n <= 6
	case 6:
		return true
	}
	return n >= 1 && n <= 2
}

// rfc3339Timestamp is scanReaderTimestamp's fast path for the common text of a file, RFC 3339:
// "yyyy-mm-ddThh:mm:ss", optionally "." and 1 to 9 digits, then Z, +hh:mm or -hh:mm, nothing
// around it. It gives the instant scanReaderTimestamp gives; ok is false for any other text
// (which may still be a timestamp: the scanner decides).
func rfc3339Timestamp(s string) (ts Timestamp, ok bool) {
	n := len(s)
	if n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	num := func(k, width int) int {
		v := 0
		for _, c := range []byte(s[k : k+width]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, second := num(11, 2), num(14, 2), num(17, 2)
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 {
		return 0, false
	}
	k, micros := 19, 0
	if s[k] == '.' {
		k++
		for d := 0; k < n && s[k] >= '0' && s[k] <= '9'; k, d = k+1, d+1 {
			if d < 6 {
				micros = micros*10 + int(s[k]-'0')
			}
			if d == 9 {
				return 0, false
			}
		}
		if k == 20 {
			return 0, false // "." and no digit: the scanner reads that
		}
		for d := k - 20; d < 6; d++ {
			micros *= 10
		}
	}
	offset := 0
	switch {
	case k == n-1 && s[k] == 'Z':
	case k == n-6 && (s[k] == '+' || s[k] == '-') && s[k+3] == ':':
		h, m := num(k+1, 2), num(k+4, 2)
		if h < 0 || m < 0 || m > 59 || h*60+m > 18*60 {
			return 0, false
		}
		offset = h*3600 + m*60
		if s[k] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	instant := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+second-offset)
	if instant < minEpochSeconds || instant >= maxEpochSeconds {
		return 0, false
	}
	return Timestamp(instant*1_000_000 + int64(micros)), true
}

// scanReaderTimestamp is ParseReaderTimestamp without its GMT retry: the instant of s, or the
// fault and, for faultZone, the zone text.
func scanReaderTimestamp(s string) (Timestamp, timestampFault, string) {
	if ts, ok := rfc3339Timestamp(s); ok {
		return ts, faultNone, ""
	}
	return scanTimestampText(s)
}

// scanTimestampText is scanReaderTimestamp without its fast path: parseTimestampString's scan
// of segments, then the zone and the instant.
func scanTimestampText(s string) (Timestamp, timestampFault, string) {
	start, end := 0, len(s)
	for start < end && isSparkSpace(s[start]) {
		start++
	}
	for end > start && isSparkSpace(s[end-1]) {
		end--
	}
	if start == end {
		return 0, faultSyntax, ""
	}
	// year, month, day, hour, minute, second, microsecond
	seg := [7]int{0, 1, 1, 0, 0, 0, 0}
	i, val, digits, fracDigits := 0, 0, 0, 0
	signed, negative, timeOnly := false, false, false
	zone := ""
	j := start
	if c := s[j]; c == '-' || c == '+' {
		signed, negative = true, c == '-'
		j++
	}
scan:
	for ; j < end; j++ {
		c := s[j]
		if c >= '0' && c <= '9' {
			if i == 6 {
				fracDigits++
				if digits < 6 { // beyond microseconds the digits are dropped
					val = val*10 + int(c-'0')
				}
			} else if digits < 9 { // more digits than 9 fit no segment anyway
				val = val*10 + int(c-'0')
			}
			digits++
			continue
		}
		switch {
		case j == 0 && c == 'T': // "T10:00:00", the text's very first byte
			timeOnly = true
			i += 3
			continue
		case i == 0 && c == ':' && !signed: // "10:00:00": the digits read were the hours
			timeOnly = true
			if !timestampDigits(3, digits) {
				return 0, faultSyntax, ""
			}
			seg[3], val, digits, i = val, 0, 0, 4
			continue
		case i < 2 && c == '-', i == 2 && (c == ' ' || c == 'T'), (i == 3 || i == 4) && c == ':', i == 5 && c == '.':
			// the separator after segment i
		case i == 5 || i == 6: // after the seconds or the fraction, the rest is the zone
			if !timestampDigits(i, digits) {
				return 0, faultSyntax, ""
			}
			seg[i], val, digits = val, 0, 0
			zone = s[j:end]
			i = 7
			break scan
		case (i == 3 || i == 4) && digits > 0 && (c == 'Z' || c == '+' || c == '-' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'):
			return 0, faultZoneEarly, ""
		default:
			return 0, faultSyntax, ""
		}
		if !timestampDigits(i, digits) {
			return 0, faultSyntax, ""
		}
		seg[i], val, digits = val, 0, 0
		i++
	}
	if i < 7 {
		if !timestampDigits(i, digits) {
			return 0, faultSyntax, ""
		}
		seg[i] = val
	}
	if timeOnly {
		return 0, faultTimeOnly, ""
	}
	for ; fracDigits < 6; fracDigits++ {
		seg[6] *= 10
	}
	year, month, day := seg[0], seg[1], seg[2]
	if negative {
		year = -year
	}
	if month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || seg[3] > 23 || seg[4] > 59 || seg[5] > 59 {
		return 0, faultNoSuchDay, ""
	}
	local := daysFromCivil(year, month, day)*86400 + int64(seg[3]*3600+seg[4]*60+seg[5])
	instant := local
	if zone != "" {
		offset, loc, ok := readerZone(zone)
		switch {
		case !ok:
			return 0, faultZone, zone
		case loc != nil:
			instant = zonedInstant(local, loc)
		default:
			instant = local - int64(offset)
		}
	}
	if instant < minEpochSeconds || instant >= maxEpochSeconds {
		return 0, faultRange, ""
	}
	return Timestamp(instant*1_000_000 + int64(seg[6])), faultNone, ""
}

// daysInMonth returns the number of days of month (1 to 12) of year in the proleptic Gregorian
// calendar, which java.time.LocalDate and Go's time use.
func daysInMonth(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to year-month-day of the proleptic Gregorian
// calendar, counting in 400-year cycles of 146097 days from a year that starts in March.
func daysFromCivil(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y-- // January and February end the year before
	}
	cycle := y / 400
	if y < 0 && y%400 != 0 {
		cycle--
	}
	yearOfCycle := y - cycle*400
	m := int64(month) - 3
	if m < 0 {
		m += 12
	}
	dayOfYear := (153*m+2)/5 + int64(day) - 1
	dayOfCycle := yearOfCycle*365 + yearOfCycle/4 - yearOfCycle/100 + dayOfYear
	return cycle*146097 + dayOfCycle - 719468 // 719468: 0000-03-01 to 1970-01-01
}

// zonedInstant returns the instant, in seconds since the epoch, of the wall clock local (seconds
// since 1970-01-01T00:00:00 read as UTC) in loc as java.time.ZonedDateTime.of finds it: a wall
// clock that the zone skips (a gap) or shows twice (an overlap) takes the offset in effect
// before that transition, so a skipped one is moved later by the gap's length and a repeated
// one is its earlier instant.
func zonedInstant(local int64, loc *time.Location) int64 {
	const span = 18 * 3600 // no offset is larger
	t := time.Unix(local-span, 0).In(loc)
	_, off := t.Zone()
	found := local - int64(off)
	for {
		_, off := t.Zone()
		offset := int64(off)
		start, end := t.ZoneBounds()
		if u := local - offset; (start.IsZero() || u >= start.Unix()) && (end.IsZero() || u < end.Unix()) {
			found = u
		}
		if end.IsZero() || end.Unix() > local+span {
			return found
		}
		_, after := end.Zone()
		lo, hi := min(offset, int64(after)), max(offset, int64(after))
		if at := end.Unix(); at+lo <= local && local < at+hi {
			return local - offset
		}
		t = end
	}
}

// shortZoneIDs is java.time.ZoneId.SHORT_IDS, the three-letter zone ids Spark's getZoneId takes.
var shortZoneIDs = map[string]string{
	"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo",
	"BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
	"CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa",
	"ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata",
	"JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
	"PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
	"VST": "Asia/Ho_Chi_Minh", "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}

// readerZone resolves the zone text of a timestamp as Spark's getZoneId does: trimmed, "+h:"
// and a final "+hh:m" given their missing zero, a short id replaced (shortZoneIDs), then
// java.time.ZoneId.of: Z or an offset (offsetSeconds), UTC, GMT or UT alone or followed by an
// offset, or a region id, which Go's time.LoadLocation must hold. It returns the offset in
// seconds east of UTC or the region's location; ok is false for any other text.
func readerZone(z string) (offset int, loc *time.Location, ok bool) {
	if z == "Z" {
		return 0, nil, true
	}
	z = strings.TrimFunc(z, func(r rune) bool { return r <= ' ' }) // java.lang.String.trim
	if len(z) == 3 {
		if id, short := shortZoneIDs[z]; short {
			z = id
		}
	}
	var buf [20]byte
	var id []byte
	if len(z) <= 16 { // longer is no offset, with or without prefix
		id = normalizeOffset(append(buf[:0], z...))
	}
	switch {
	case len(z) <= 1 || z[0] == '+' || z[0] == '-':
		offset, ok = offsetSeconds(id)
		return offset, nil, ok
	case z == "UTC" || z == "GMT" || z == "UT":
		return 0, nil, true
	case len(z) > 3 && (z[:3] == "UTC" || z[:3] == "GMT") && (z[3] == '+' || z[3] == '-'):
		offset, ok = offsetSeconds(id[min(3, len(id)):])
		return offset, nil, ok
	case len(z) > 2 && z[:2] == "UT" && (z[2] == '+' || z[2] == '-'):
		offset, ok = offsetSeconds(id[min(2, len(id)):])
		return offset, nil, ok
	}
	loc, ok = regionZone(z)
	return 0, loc, ok
}

// normalizeOffset gives, in place, the first "+h:" (or "-h:") of id its leading zero, then a final
// "+hh:m" its minutes' zero, as Spark's getZoneId does for the forms earlier Sparks took; id
// has room for two more bytes.
func normalizeOffset(id []byte) []byte {
	digit := func(k int) bool { return id[k] >= '0' && id[k] <= '9' }
	sign := func(k int) bool { return id[k] == '+' || id[k] == '-' }
	for k := 0; k+2 < len(id); k++ {
		if sign(k) && digit(k+1) && id[k+2] == ':' {
			id = append(id, 0)
			copy(id[k+2:], id[k+1:])
			id[k+1] = '0'
			break
		}
	}
	if n := len(id); n >= 5 && sign(n-5) && digit(n-4) && digit(n-3) && id[n-2] == ':' && digit(n-1) {
		id = append(id, id[n-1])
		id[n-1] = '0'
	}
	return id
}

// offsetSeconds reads id as java.time.ZoneOffset.of does: "Z", or a sign and then h, hh, hh:mm,
// hhmm, hh:mm:ss or hhmmss, at most 18 hours; it returns seconds east of UTC.
func offsetSeconds(id []byte) (int, bool) {
	if len(id) == 1 && id[0] == 'Z' {
		return 0, true
	}
	two := func(k int) (int, bool) {
		if k+1 >= len(id) || id[k] < '0' || id[k] > '9' || id[k+1] < '0' || id[k+1] > '9' {
			return 0, false
		}
		return int(id[k]-'0')*10 + int(id[k+1]-'0'), true
	}
	var h, m, s int
	ok, okM, okS := true, true, true
	switch len(id) {
	case 2:
		h, ok = int(id[1]-'0'), id[1] >= '0' && id[1] <= '9'
	case 3:
		h, ok = two(1)
	case 5:
		h, ok = two(1)
		m, okM = two(3)
	case 6:
		h, ok = two(1)
		m, okM = two(4)
		okM = okM && id[3] == ':'
	case 7:
		h, ok = two(1)
		m, okM = two(3)
		s, okS = two(5)
	case 9:
		h, ok = two(1)
		m, okM = two(4)
		s, okS = two(7)
		okS = okS && id[3] == ':' && id[6] == ':'
	default:
		return 0, false
	}
	if !ok || !okM || !okS || (id[0] != '+' && id[0] != '-') || h > 18 || m > 59 || s > 59 {
		return 0, false
	}
	total := h*3600 + m*60 + s
	if total > 18*3600 {
		return 0, false
	}
	if id[0] == '-' {
		total = -total
	}
	return total, true
}

// zoneCache holds the locations regionZone loaded, by name (nil: none such), at most
// zoneCacheMax of them.
var zoneCache struct {
	sync.RWMutex
	m map[string]*time.Location
}

const zoneCacheMax = 1024

// regionZone returns the location of a region zone id (Europe/Paris) as java.time.ZoneRegion
// takes one: a letter then letters, digits and ~/._+-, held by the time zone database that Go's
// time.LoadLocation reads; names that are files of that database but no zone of java.time's
// (Local, localtime, posixrules, Factory, posix/..., right/...) are refused.
func regionZone(name string) (*time.Location, bool) {
	if len(name) < 2 || !isLetter(name[0]) || name == "Local" || name == "localtime" || name == "posixrules" ||
		name == "Factory" || strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/") {
		return nil, false
	}
	for k := 1; k < len(name); k++ {
		if c := name[k]; !isLetter(c) && (c < '0' || c > '9') && !strings.ContainsRune("~/._+-", rune(c)) {
			return nil, false
		}
	}
	zoneCache.RLock()
	loc, seen := zoneCache.m[name]
	zoneCache.RUnlock()
	if seen {
		return loc, loc != nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	zoneCache.Lock()
	if zoneCache.m == nil {
		zoneCache.m = map[string]*time.Location{}
	}
	if len(zoneCache.m) < zoneCacheMax {
		zoneCache.m[name] = loc
	}
	zoneCache.Unlock()
	return loc, loc != nil
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
