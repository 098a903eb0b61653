package schema

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
)

var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// ParseDecimal converts decimal text ("25.5", "-3", "1e2") to the unscaled value of a
// DECIMAL(precision, scale). Extra fraction digits are rounded half away from zero (HALF_UP), as
// Spark's JSON and CSV readers do; a value with more than precision digits is an error. The
// precision is at most MaxLongDecimalPrecision: a wider DECIMAL's values are ParseDecimal128's.
func ParseDecimal(s string, t Type) (Decimal, error) {
	if t.Precision > MaxLongDecimalPrecision {
		return 0, fmt.Errorf("internal error: %s holds Decimal128 values, which ParseDecimal128 parses", t.DDL())
	}
	if v, ok := parsePlainDecimal(s, t.Scale); ok {
		if v <= -pow10[t.Precision] || v >= pow10[t.Precision] {
			return 0, fmt.Errorf("%s does not fit %s", s, t.DDL())
		}
		return Decimal(v), nil
	}
	n, err := parseDecimalBig(s, t.Scale)
	if err != nil {
		return 0, err
	}
	lim := big.NewInt(pow10[t.Precision])
	if new(big.Int).Abs(n).Cmp(lim) >= 0 {
		return 0, fmt.Errorf("%s does not fit %s", s, t.DDL())
	}
	return Decimal(n.Int64()), nil
}

// DecimalText returns the text of a DECIMAL value given as a string (a JSON string, a CSV field)
// with its grouping commas dropped ("1,000.50" is "1000.50"), as Spark's JSON and CSV readers
// parse such text in their default locale, en-US (ExprUtils.getDecimalParser:
// new BigDecimal(s.replaceAll(",", ""))). A JSON number has no commas to drop.
func DecimalText(s string) string {
	if strings.IndexByte(s, ',') < 0 {
		return s
	}
	return strings.ReplaceAll(s, ",", "")
}

// parsePlainDecimal is ParseDecimal's fast path: s of the form -?digits(.digits)? with no more
// fraction digits than scale and at most 18 digits once scaled, the unscaled value exact. ok is
// false for anything else (the exact path decides). One pass over s: the digits accumulate as
// the point is looked for.
func parsePlainDecimal(s string, scale int) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var v int64 // may wrap on a long s, which the length check below then rejects
	dot := -1
	for i := 0; i < len(s); i++ {
		if d := s[i] - '0'; d <= 9 {
			v = v*10 + int64(d)
			continue
		}
		if s[i] != '.' || dot >= 0 {
			return 0, false
		}
		dot = i
	}
	intLen, fracLen := len(s), 0
	if dot >= 0 {
		intLen, fracLen = dot, len(s)-dot-1
	}
	if intLen == 0 || (dot >= 0 && fracLen == 0) || fracLen > scale || intLen+scale > 18 {
		return 0, false
	}
	v *= pow10[scale-fracLen]
	if neg {
		v = -v
	}
	return v, true
}

// FormatDecimal writes the unscaled value v with exactly scale digits after the point ("25.50").
func FormatDecimal(v Decimal, scale int) string {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	s := strconv.FormatUint(u, 10)
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Epoch seconds of the first and last instants a TIMESTAMP holds, 0001-01-01T00:00:00Z and
// 9999-12-31T23:59:59.999999Z (Spark's TimestampType range).
const (
	minEpochSeconds = -62135596800
	maxEpochSeconds = 253402300800 // exclusive
)

// EpochSeconds returns the TIMESTAMP of raw, a JSON number of seconds since
// 1970-01-01T00:00:00Z (a number in a TIMESTAMP column), rounded to the microsecond. Errors: raw
// is not a number, or it lies outside 0001-01-01 to 9999-12-31, which the type does not hold.
func EpochSeconds(raw string) (Timestamp, error) {
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is not a timestamp", raw)
	}
	if !(f >= minEpochSeconds && f < maxEpochSeconds) {
		return 0, fmt.Errorf("%s seconds since 1970 is outside the years 1 to 9999 that a TIMESTAMP holds", raw)
	}
	return Timestamp(int64(math.Round(f * 1e6))), nil
}

// ParseTimestamp reads RFC 3339 text (any UTC offset, fraction optional; "2024-01-31 10:00:00"
// without offset is taken as UTC; the letters T and Z in either case) and returns microseconds
// since the epoch.
func ParseTimestamp(s string) (Timestamp, error) {
	text := strings.ToUpper(strings.TrimSpace(s))
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, text); err == nil {
			return Timestamp(t.UnixMicro()), nil
		}
	}
	return 0, fmt.Errorf("%q is not an RFC 3339 timestamp (e.g. 2024-01-31T10:00:00Z)", s)
}

// ParseDate reads "YYYY-MM-DD" and returns days since 1970-01-01.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return Date(t.Unix() / 86400), nil
}

// ParseReaderDate reads the text of a DATE value in a JSON or CSV file as Spark's readers read it
// without a dateFormat option: JacksonParser and UnivocityParser fall back, when the text is not
// yyyy-MM-dd, to DateTimeUtils.stringToDate, which this follows. After white space, an optional
// sign, a year of 4 to 7 digits, then optionally "-" and a month of 1 or 2 digits, then
// optionally "-" and a day of 1 or 2 digits; after the day, a space or a T ends the date and what
// follows is ignored ("2024-01-31T10:00:00Z" and "2024-01-31 extra" are 2024-01-31). A year
// alone or a year and a month are their first day ("2024" is 2024-01-01, "2024-3" 2024-03-01).
// A date that does not exist (2024-02-30), or other text, is an error; the result is days
// since 1970-01-01. White space and control characters around the text (bytes up to ' ', and
// 0x7F) are trimmed (UTF8String.trimAll), and text that is no date is read once more with every
// "GMT" removed, as the readers' fallback does (DateTimeUtils.cleanLegacyTimestampStr).
func ParseReaderDate(s string) (Date, error) {
	d, err := scanReaderDate(s)
	if err != nil && strings.Contains(s, "GMT") {
		if d, err2 := scanReaderDate(strings.ReplaceAll(s, "GMT", "")); err2 == nil {
			return d, nil
		}
	}
	return d, err
}

// scanReaderDate is ParseReaderDate without its GMT retry.
func scanReaderDate(s string) (Date, error) {
	b := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
	bad := readerDateError{s} // made only when returned: a file's every date comes here
	seg := [3]int{1, 1, 1}
	sign, i, j, val, digits := 1, 0, 0, 0, 0
	valid := func(i, digits int) bool {
		return (i == 0 && digits >= 4 && digits <= 7) || (i != 0 && digits > 0 && digits <= 2)
	}
	if j < len(b) && (b[j] == '-' || b[j] == '+') {
		if b[j] == '-' {
			sign = -1
		}
		j++
	}
	for ; j < len(b) && b[j] != ' ' && b[j] != 'T'; j++ {
		c := b[j]
		if i < 2 && c == '-' {
			if !valid(i, digits) {
				return 0, bad
			}
			seg[i], val, digits = val, 0, 0
			i++
			continue
		}
		if c < '0' || c > '9' {
			return 0, bad
		}
		val = val*10 + int(c-'0')
		digits++
	}
	if !valid(i, digits) || (i < 2 && j < len(b)) {
		return 0, bad // a year, or a year and a month, is the whole text
	}
	seg[i] = val
	y, m, d := sign*seg[0], seg[1], seg[2]
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if m < 1 || m > 12 || t.Year() != y || int(t.Month()) != m || t.Day() != d {
		return 0, bad
	}
	return Date(t.Unix() / 86400), nil
}

// readerDateError is ParseReaderDate's error for text that is no date.
type readerDateError struct{ text string }

func (e readerDateError) Error() string {
	return fmt.Sprintf("%q is not a date (YYYY-MM-DD, as Spark's readers read one)", e.text)
}

// ParseReaderTimestamp reads the text of a TIMESTAMP value in a JSON or CSV file as Spark's
// readers read it without a timestampFormat option, and returns microseconds since the epoch:
// JacksonParser and UnivocityParser parse it with DateTimeUtils.stringToTimestamp
// (SparkDateTimeUtils.parseTimestampString) in the session time zone, UTC here, and when that
// fails once more with every "GMT" removed (DateTimeUtils.cleanLegacyTimestampStr); this follows
// both. After white space and control characters: an optional sign and a year of 4 to 6 digits,
// then optionally "-" and a month, then "-" and a day, of 1 or 2 digits each (a year, or a year
// and a month, alone is its first day); after the day, nothing (midnight), or a space or a T
// and hours, then optionally ":" and minutes, then ":" and seconds, of 1 or 2 digits each
// ("2024-01-31T10" and "2024-1-5 9:05" are valid, a missing part 0; "2024-01-31T" is not, since
// SPARK-36286); after the seconds, optionally "." and a
// fraction of any number of digits (beyond microseconds truncated), then optionally a zone,
// which only the seconds or the fraction may carry: Z; an offset +h, +hh, +hh:mm, +hhmm,
// +hh:mm:ss or +hhmmss (and +h:mm, +hh:m), at most 18 hours; UTC, GMT or UT, alone or followed
// by such an offset; a short id of java.time.ZoneId.SHORT_IDS (PST, EST); or a region id
// (Europe/Paris, CET), which the time zone database Go's time.LoadLocation reads must hold, as
// java.time's must. In a region, a wall clock the zone skips takes the offset before the jump
// and one it shows twice is the earlier instant (java.time.ZonedDateTime.of). Letters are as
// written: a lower-case t or z is refused, as Spark refuses it; text without zone is UTC, as
// ParseTimestamp reads it. Errors: other text; a day or time that does not exist (2024-02-30,
// 24:00:00); an unknown zone; an instant outside the years 1 to 9999 that a TIMESTAMP holds
// (Spark's reader goes on to years of 6 digits; Tributary's type stops at 9999, as EpochSeconds
// does); and a time without a date ("10:00:00", "T10:00:00"), which Spark reads as on
// the day the query runs: a pipeline reading the same file on another day would store another
// instant, so it is refused rather than made to depend on the clock.
func ParseReaderTimestamp(s string) (Timestamp, error) {
	ts, fault, zone := scanReaderTimestamp(s)
	if fault == faultNone {
		return ts, nil
	}
	if strings.Contains(s, "GMT") {
		if ts, again, _ := scanReaderTimestamp(strings.ReplaceAll(s, "GMT", "")); again == faultNone {
			return ts, nil
		}
	}
	return 0, readerTimestampError{text: s, zone: zone, fault: fault} // made only when returned
}

// FormatTimestamp writes microseconds since the epoch as RFC 3339 UTC with six fraction digits
// ("2024-01-31T10:00:00.000000Z"), the form of spec.md §2.
func FormatTimestamp(v Timestamp) string {
	return time.UnixMicro(int64(v)).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// ParseTimestampNTZ reads the text of a TIMESTAMP_NTZ value: a date and a wall-clock time
// without zone, "2024-01-31T10:00:00", "2024-01-31 10:00:00.123456" (T or a space; the
// fraction optional, up to 9 digits, beyond microseconds truncated) or a date alone (midnight),
// and returns the microseconds of that wall clock read as if it were UTC. Text with a zone
// ("Z", "+02:00") is an error, as Spark's JSON and CSV readers refuse it for a TIMESTAMP_NTZ
// column (TimestampFormatter.parseWithoutTimeZone with allowTimeZone false): the offset would
// have to be either dropped or applied, and each reads another instant as the same value.
func ParseTimestampNTZ(s string) (Timestamp, error) {
	text := strings.ToUpper(strings.TrimSpace(s))
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, text); err == nil {
			return Timestamp(t.UnixMicro()), nil
		}
	}
	if _, err := ParseTimestamp(s); err == nil {
		return 0, fmt.Errorf("%q has a time zone, which a TIMESTAMP_NTZ does not hold: write the local time without Z or offset (e.g. 2024-01-31T10:00:00), or declare the column TIMESTAMP", s)
	}
	return 0, fmt.Errorf("%q is not a timestamp without time zone (e.g. 2024-01-31T10:00:00)", s)
}

// FormatTimestampNTZ writes a TIMESTAMP_NTZ value (the microseconds of a wall clock read as if
// UTC) as ISO 8601 without zone, with six fraction digits ("2024-01-31T10:00:00.000000").
func FormatTimestampNTZ(v Timestamp) string {
	return time.UnixMicro(int64(v)).UTC().Format("2006-01-02T15:04:05.000000")
}

// FormatDate writes days since the epoch as "YYYY-MM-DD".
func FormatDate(v Date) string {
	return time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02")
}

// FromJSON converts one decoded JSON value (decoded with json.Decoder.UseNumber, so numbers
// arrive as json.Number) to the Go value of type t. A JSON null is nil. DECIMAL takes a number or
// a numeric string; TIMESTAMP takes RFC 3339 text or epoch seconds; TIMESTAMP_NTZ takes text
// without zone (ParseTimestampNTZ: text with a zone and numbers do not fit, as in Spark's JSON
// reader); DATE takes "YYYY-MM-DD";
// STRUCT takes an object, its fields by name (others ignored, missing ones NULL; a field that
// does not fit makes the whole value not fit); ARRAY takes an array, each element converted to
// the element type (a JSON null is a NULL element); MAP takes an object, each key text converted
// to the key type as a JSON string of it would be ("7" for an INT key) and each value to the
// value type, the entries in key-text order (a decoded JSON object keeps no order). An element,
// key or value that does not fit makes the whole value not fit, and the error names it; so do
// two key texts that convert to the same key ("7" and "07" for an INT key), as under Spark's
// default spark.sql.mapKeyDedupPolicy EXCEPTION.
// An error says why the value does not fit; the caller decides whether that is NULL, rescue or failure.
// FromJSON reads a JSON string as text (a "12" fills a BIGINT): it converts values Tributary
// keeps as JSON itself; FromJSONReader converts the values of the files a source ingests.
func FromJSON(t Type, v any) (any, error) {
	return fromJSON(t, v, false)
}

// FromJSONReader converts one decoded JSON value of an ingested file (numbers as json.Number) to
// the Go value of type t as Spark's JSON reader (JacksonParser) converts the token: as FromJSON,
// except that a JSON string does not fit a BIGINT, INT, SMALLINT, TINYINT or BOOLEAN column, nor
// a DOUBLE or FLOAT one unless it is "NaN", "Infinity", "+Infinity", "+INF", "-Infinity" or
// "-INF" (Spark's allowNonNumericNumbers, on by default), nor a DECIMAL one when it has white
// space around the number (java.math.BigDecimal takes none), at any depth of a STRUCT, ARRAY or
// MAP value; and that a DATE or TIMESTAMP (not TIMESTAMP_NTZ) takes its text as Spark's readers
// read it without a dateFormat or timestampFormat (ParseReaderDate, ParseReaderTimestamp: a
// TIMESTAMP of "2024-1-5 9:05" or "2024-01-31T10:00:00+0100", not "2024-01-31t10:00:00z").
// DECIMAL and BINARY columns take other strings as FromJSON does, and so do MAP keys (a JSON
// object's keys are strings: a TIMESTAMP key is read by ParseTimestamp).
func FromJSONReader(t Type, v any) (any, error) {
	return fromJSON(t, v, true)
}

// fromJSON is FromJSON, or with reader FromJSONReader.
func fromJSON(t Type, v any, reader bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	if x, ok := v.(json.Number); ok && (t.Kind == Long || t.Kind == Integer || t.Kind == DecimalKind || t.Kind == TimestampKind) {
		if _, nonNumeric := nonNumericNumber(string(x)); nonNumeric {
			// A token NaN, Infinity, +Infinity, -Infinity, +INF or -INF, which Spark's JSON reader
			// (Jackson's ALLOW_NON_NUMERIC_NUMBERS) reads as a floating-point number: its
			// JacksonParser fills a DOUBLE, FLOAT or STRING column with it, and refuses it for
			// the integer types and TIMESTAMP (VALUE_NUMBER_INT only) and DECIMAL (getDecimalValue).
			return nil, fmt.Errorf("%s is not a number for %s: Spark's JSON reader reads NaN, Infinity, +Infinity, -Infinity, +INF and -INF into DOUBLE and FLOAT columns only (a STRING column keeps the text)", x, t.DDL())
		}
	}
	if x, ok := v.(string); ok && reader {
		switch t.Kind {
		case Long, Integer, Boolean:
			return nil, stringTokenError(t, x)
		case Double:
			if f, ok := nonNumericNumber(x); ok {
				return t.Float(f), nil
			}
			return nil, stringTokenError(t, x)
		case DecimalKind:
			if trimmed := strings.TrimSpace(x); trimmed != x {
				return nil, fmt.Errorf("%q has white space around the number, which %s does not take from a JSON string, as Spark's JSON reader does not (java.math.BigDecimal): write %q", x, t.DDL(), trimmed)
			}
		}
	}
	switch t.Kind {
	case Long, Integer:
		var n int64
		switch x := v.(type) {
		case json.Number:
			i, err := strconv.ParseInt(string(x), 10, 64)
			if errors.Is(err, strconv.ErrRange) && !strings.ContainsAny(string(x), ".eE") {
				return nil, fmt.Errorf("%s does not fit %s", x, t.DDL())
			}
			if err != nil {
				return nil, numberNotInteger(x, t)
			}
			n = i
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if errors.Is(err, strconv.ErrRange) {
				return nil, fmt.Errorf("%q does not fit %s", x, t.DDL())
			}
			if err != nil {
				return nil, fmt.Errorf("%q is not a whole number for %s", x, t.DDL())
			}
			n = i
		default:
			return nil, fmt.Errorf("%s is not a number for %s", jsonKind(v), t.DDL())
		}
		if t.Kind == Integer {
			if lo, hi := t.IntRange(); n < lo || n > hi {
				return nil, fmt.Errorf("%d does not fit %s", n, t.DDL())
			}
			return int32(n), nil
		}
		return n, nil
	case String:
		if t.IsBinary() {
			x, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s is not a base64 string for BINARY", jsonKind(v))
			}
			b, err := DecodeBase64(x)
			if err != nil {
				return nil, err
			}
			return string(b), nil
		}
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return string(x), nil
		case bool:
			return strconv.FormatBool(x), nil
		default:
			return jsonText(x), nil
		}
	case Double:
		switch x := v.(type) {
		case json.Number:
			// Beyond DOUBLE's range is an infinity, as Spark's JSON reader reads it.
			f, err := t.ParseFloat(string(x))
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, fmt.Errorf("%s is not a number", x)
			}
			return t.Float(f), nil
		case string:
			f, err := t.ParseFloat(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("%q is not a number for %s", x, t.DDL())
			}
			return t.Float(f), nil
		}
		return nil, fmt.Errorf("%s is not a number for %s", jsonKind(v), t.DDL())
	case Boolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not true or false", x)
		}
		return nil, fmt.Errorf("%s is not a boolean", jsonKind(v))
	case DecimalKind:
		switch x := v.(type) {
		case json.Number:
			return ParseDecimalValue(string(x), t)
		case string:
			return ParseDecimalValue(DecimalText(x), t)
		}
		return nil, fmt.Errorf("%s is not a number for %s", jsonKind(v), t.DDL())
	case DateKind:
		if x, ok := v.(string); ok {
			if reader {
				return ParseReaderDate(x)
			}
			return ParseDate(x)
		}
		return nil, fmt.Errorf("%s is not a date string (YYYY-MM-DD)", jsonKind(v))
	case StructKind:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object for %s", jsonKind(v), t.DDL())
		}
		out := make([]any, len(t.Struct.Fields))
		for i, f := range t.Struct.Fields {
			x, err := fromJSON(f.Type, obj[f.Name], reader)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			out[i] = x
		}
		return out, nil
	case ArrayKind:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an array for %s", jsonKind(v), t.DDL())
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			x, err := fromJSON(*t.Elem, e, reader)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = x
		}
		return out, nil
	case MapKind:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object for %s", jsonKind(v), t.DDL())
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(Map, len(keys))
		seen := make(map[string]string, len(keys)) // AppendKey of the converted key -> JSON key
		for i, k := range keys {
			kv, err := FromJSON(*t.Key, k)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			if kv == nil {
				return nil, fmt.Errorf("key %q: a MAP key cannot be NULL", k)
			}
			ks := string(AppendKey(nil, []any{kv}))
			if first, dup := seen[ks]; dup {
				// Spark's spark.sql.mapKeyDedupPolicy EXCEPTION (its default): a map holds each key once.
				return nil, fmt.Errorf("keys %q and %q are the same %s key", first, k, t.Key.DDL())
			}
			seen[ks] = k
			vv, err := fromJSON(*t.Value, obj[k], reader)
			if err != nil {
				return nil, fmt.Errorf("value of key %q: %w", k, err)
			}
			out[i] = MapEntry{Key: kv, Value: vv}
		}
		return out, nil
	case TimestampKind:
		if t.IsNTZ() {
			if x, ok := v.(string); ok {
				return ParseTimestampNTZ(x)
			}
			return nil, fmt.Errorf("%s is not a timestamp text for TIMESTAMP_NTZ (e.g. \"2024-01-31T10:00:00\")", jsonKind(v))
		}
		switch x := v.(type) {
		case string:
			if reader {
				return ParseReaderTimestamp(x)
			}
			return ParseTimestamp(x)
		case json.Number:
			return EpochSeconds(string(x))
		}
		return nil, fmt.Errorf("%s is not a timestamp", jsonKind(v))
	}
	return nil, fmt.Errorf("unsupported type %s", t.DDL())
}

// nonNumericNumber is the DOUBLE of a JSON string Spark's JSON reader takes for a DoubleType or
// FloatType field under allowNonNumericNumbers (its default): "NaN" and the infinities, spelt
// exactly so; ok is false for every other string.
func nonNumericNumber(s string) (f float64, ok bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity", "+Infinity", "+INF":
		return math.Inf(1), true
	case "-Infinity", "-INF":
		return math.Inf(-1), true
	}
	return 0, false
}

// stringTokenError is FromJSONReader's error for a JSON string s given to a number or BOOLEAN
// column of type t, which Spark's JSON reader takes only as a number or as true or false. When the
// text is one FromJSON would accept, the error gives the value to write instead.
func stringTokenError(t Type, s string) error {
	if _, err := fromJSON(t, s, false); err != nil {
		return err // not a number (or not true or false) at all: FromJSON's words say so
	}
	kind := "a JSON number"
	if t.Kind == Boolean {
		kind = "true or false"
	}
	literal := strings.TrimSpace(s)
	if t.Kind == Boolean {
		literal = strings.ToLower(literal)
	}
	if t.Kind == Double {
		return fmt.Errorf("%q is a JSON string, and %s takes %s (or one of the strings \"NaN\", \"Infinity\", \"+Infinity\", \"+INF\", \"-Infinity\" and \"-INF\"), as Spark's JSON reader does: write %s without quotes, or declare the column STRING", s, t.DDL(), kind, literal)
	}
	return fmt.Errorf("%q is a JSON string, and %s takes %s only, as Spark's JSON reader does: write %s without quotes, or declare the column STRING", s, t.DDL(), kind, literal)
}

// JSONValueText is the text a STRING column keeps of raw, the text of a JSON object or array
// (without white space around it), as Spark's JSON reader writes it (JacksonParser copies the
// value's structure to a generator): the members in their order in raw, no white space between
// tokens, strings escaped as jsonText escapes them, numbers as written. ok is false when raw is
// not one JSON value; the caller then decodes it as before.
func JSONValueText(raw string) (text string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	b.Grow(len(raw))
	// counts holds, for each open object or array, how many tokens it has had: in an object,
	// even counts are before a key, odd ones before its value.
	var counts []int
	var objects []bool
	for started := false; !started || len(counts) > 0; started = true {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			b.WriteByte(byte(d))
			counts, objects = counts[:len(counts)-1], objects[:len(objects)-1]
			if n := len(counts); n > 0 {
				counts[n-1]++
			}
			continue
		}
		if n := len(counts); n > 0 {
			switch c := counts[n-1]; {
			case objects[n-1] && c%2 == 1:
				b.WriteByte(':')
			case c > 0:
				b.WriteByte(',')
			}
		}
		switch x := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(x))
			counts, objects = append(counts, 0), append(objects, x == '{')
			continue
		case json.Number:
			b.WriteString(string(x))
		case string, bool, nil:
			b.WriteString(jsonText(x))
		}
		if n := len(counts); n > 0 {
			counts[n-1]++
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false // more text after the value
	}
	return b.String(), true
}

// jsonText is the JSON text of a decoded object or array that a STRING column keeps. Its strings
// keep <, > and & as they are, as Spark's JSON reader writes such a value (Jackson escapes only
// what JSON requires), not as encoding/json's HTML-safe \u003c, \u003e and \u0026, which would
// change the text: `{"h": "<b>"}` is stored as {"h":"<b>"}.
func jsonText(x any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(x)
	return strings.TrimSuffix(b.String(), "\n")
}

// DecodeBase64 returns the bytes of s, the JSON string of a BINARY column, decoded as Spark's
// JSON reader decodes it (JacksonParser reads a BinaryType value with getBinaryValue, in Jackson's
// default Base64Variant, MIME-NO-LINEFEEDS): groups of four characters of the standard alphabet
// (A-Z, a-z, 0-9, +, /), white space (a character up to U+0020) allowed before each group, the
// last group padded with '=' (that variant requires the padding when reading); bits past the
// last byte are ignored. "AQL/" is the bytes 01 02 FF, "AQI=" 01 02, "" no bytes. Any other
// string is an error saying why: FromJSON's caller then treats the value as one that does not
// fit its column, as Spark makes it a bad record.
func DecodeBase64(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)/4*3)
	var quad [4]byte
	for i := 0; ; {
		for i < len(s) && s[i] <= ' ' {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		n := copy(quad[:], s[i:])
		if n < 4 {
			if strings.ContainsRune(s[i:], '=') {
				return nil, fmt.Errorf("%q is not base64 for BINARY: it ends in a group of %d characters; a group has 4", shortText(s), n)
			}
			return nil, fmt.Errorf("%q is not base64 for BINARY: it ends without its '=' padding (a group has 4 characters; e.g. \"AQI=\" for the bytes 01 02)", shortText(s))
		}
		var dec [3]byte
		k, err := base64.StdEncoding.Decode(dec[:], quad[:])
		if err != nil {
			at := i
			if ce, ok := err.(base64.CorruptInputError); ok {
				at += int(ce)
			}
			return nil, fmt.Errorf("%q is not base64 for BINARY: %s at character %d (base64 takes A-Z, a-z, 0-9, + and /, '=' only as padding at the end of a group of 4)", shortText(s), badBase64Char(s, at), at+1)
		}
		out = append(out, dec[:k]...)
		i += 4
	}
}

// badBase64Char describes the character of s at byte i for DecodeBase64's errors.
func badBase64Char(s string, i int) string {
	if i >= len(s) {
		return "the end"
	}
	return fmt.Sprintf("%q", s[i:i+1])
}

// shortText returns s cut to its first 40 bytes (with "..." when cut), for errors.
func shortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// numberNotInteger is FromJSON's error for a JSON number that is not an integer literal, for an
// integer type t. Spark's JSON reader takes only integer literals for integer columns
// (JacksonParser, VALUE_NUMBER_INT), so that 1e2 and 2.0 do not fit BIGINT although their values
// are whole: the error says so, with the literal to write instead when there is one.
func numberNotInteger(x json.Number, t Type) error {
	notWhole := fmt.Errorf("%s is not a whole number for %s", x, t.DDL())
	text := string(x)
	// big.Rat expands the exponent first: beyond a few hundred, the number is far outside
	// every integer type, or not whole (1e-999999999), or a mantissa of as many digits.
	if e := strings.IndexAny(text, "eE"); e >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(text[e+1:], "+"))
		switch {
		case err == nil && exp > 400:
			if f, _ := strconv.ParseFloat(text, 64); f != 0 {
				return fmt.Errorf("%s does not fit %s", x, t.DDL())
			}
			text = "0" // a zero mantissa
		case err != nil || exp < -400:
			return notWhole
		}
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || !r.IsInt() {
		return notWhole
	}
	literal := r.Num().String()
	if _, err := FromJSON(t, json.Number(literal)); err != nil {
		return fmt.Errorf("%s does not fit %s", x, t.DDL())
	}
	return fmt.Errorf("%s is written with a fraction or an exponent, and %s takes integer literals only, as Spark's JSON reader does: write %s, or declare the column DOUBLE or DECIMAL", x, t.DDL(), literal)
}

// ParseFloat reads the text of a DOUBLE or FLOAT value as strconv.ParseFloat does for 64 bits
// (its errors, ErrRange beyond DOUBLE's range, are strconv's). A FLOAT is the float32 nearest the
// text, rounded once, as Java's Float.parseFloat gives it to Spark's readers, not the float32
// nearest the float64 nearest the text, which differs when the text lies just beyond halfway
// between two float32 values ("1.0000000596046448" is 1.0000001, not 1); beyond FLOAT's range it
// is an infinity.
func (t Type) ParseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || t.Storage != StorageFloat {
		return f, err
	}
	if f32, err := strconv.ParseFloat(s, 32); err == nil {
		return f32, nil
	}
	return t.Float(f), nil
}

// Float returns f as a DOUBLE column of type t holds it: f itself, or for a FLOAT column
// (StorageFloat) f rounded to the nearest float32, an infinity beyond its range (as Spark's
// readers parse a FloatType value), so that the value is the one the column's Parquet file keeps.
func (t Type) Float(f float64) float64 {
	if t.Storage == StorageFloat {
		return float64(float32(f))
	}
	return f
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// AppendJSON appends v as JSON in the `jsonl` form of spec.md §2: BIGINT/INT as numbers, DOUBLE
// as a number (NaN and infinities as "NaN", "Infinity", "-Infinity"), DECIMAL as a number with
// exactly the column's scale, DATE as "YYYY-MM-DD", TIMESTAMP as RFC 3339 UTC
// with microseconds, TIMESTAMP_NTZ as the same without zone (FormatTimestampNTZ), NULL as null; a BINARY column (Storage binary) as base64 text, as Spark's
// to_json writes it; a STRUCT as an object of its fields, an ARRAY as an array, a MAP as an
// object whose keys are the key values as Text prints them, in entry order (Spark's to_json).
func AppendJSON(buf []byte, t Type, v any) []byte { return appendJSON(buf, t, v, false) }

// AppendOutputJSON is AppendJSON for what the CLI prints (`show`, `changes`, `history` in jsonl):
// a DOUBLE or FLOAT, at any depth, is written as Spark's to_json writes it, Java's
// Double.toString or Float.toString (AppendJavaFloat: 2.0, 1.0E20), where AppendJSON, whose text
// other places keep (the CDC state, rescued data), writes Go's shortest form (2, 1e+20).
func AppendOutputJSON(buf []byte, t Type, v any) []byte { return appendJSON(buf, t, v, true) }

func appendJSON(buf []byte, t Type, v any, java bool) []byte {
	if v == nil {
		return append(buf, "null"...)
	}
	if x, ok := v.(string); ok && t.Storage == StorageBinary {
		return strconv.AppendQuote(buf, base64.StdEncoding.EncodeToString([]byte(x)))
	}
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(buf, x, 10)
	case int32:
		return strconv.AppendInt(buf, int64(x), 10)
	case string:
		b, _ := json.Marshal(x)
		return append(buf, b...)
	case float64:
		switch { // JSON has no number for these: strings, as Spark's to_json writes them
		case math.IsNaN(x):
			return append(buf, `"NaN"`...)
		case math.IsInf(x, 1):
			return append(buf, `"Infinity"`...)
		case math.IsInf(x, -1):
			return append(buf, `"-Infinity"`...)
		}
		if java {
			return AppendJavaFloat(buf, x, t.floatBits())
		}
		return strconv.AppendFloat(buf, x, 'g', -1, t.floatBits())
	case bool:
		return strconv.AppendBool(buf, x)
	case Decimal:
		return append(buf, FormatDecimal(x, t.Scale)...)
	case Decimal128:
		return AppendDecimal128(buf, x, t.Scale)
	case Date:
		return strconv.AppendQuote(buf, FormatDate(x))
	case Timestamp:
		if t.IsNTZ() {
			return strconv.AppendQuote(buf, FormatTimestampNTZ(x))
		}
		return strconv.AppendQuote(buf, FormatTimestamp(x))
	case []any:
		if t.Kind == StructKind {
			buf = append(buf, '{')
			for i, f := range t.Struct.Fields {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendQuote(buf, f.Name)
				buf = append(buf, ':')
				buf = appendJSON(buf, f.Type, x[i], java)
			}
			return append(buf, '}')
		}
		if t.Kind == ArrayKind && t.Elem != nil {
			buf = append(buf, '[')
			for i, e := range x {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = appendJSON(buf, *t.Elem, e, java)
			}
			return append(buf, ']')
		}
	case Map:
		if t.Kind == MapKind && t.Key != nil && t.Value != nil {
			buf = append(buf, '{')
			for i, e := range x {
				if i > 0 {
					buf = append(buf, ',')
				}
				k, _ := json.Marshal(Text(*t.Key, e.Key))
				buf = append(buf, k...)
				buf = append(buf, ':')
				buf = appendJSON(buf, *t.Value, e.Value, java)
			}
			return append(buf, '}')
		}
	}
	b, _ := json.Marshal(v)
	return append(buf, b...)
}

// Text returns v as text: NULL as "NULL", decimals with their scale, timestamps in RFC 3339
// UTC, TIMESTAMP_NTZ values without zone (FormatTimestampNTZ), BINARY as base64 (as AppendJSON
// writes it; Show gives the hexadecimal form of a table).
func Text(t Type, v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if t.Storage == StorageBinary {
			return base64.StdEncoding.EncodeToString([]byte(x))
		}
		return x
	case Date:
		return FormatDate(x)
	case Timestamp:
		if t.IsNTZ() {
			return FormatTimestampNTZ(x)
		}
		return FormatTimestamp(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, t.floatBits())
	}
	return string(AppendJSON(nil, t, v))
}

// Show returns v as a table for people shows it (`pipeline show --format table`): OutputText's form,
// except that a BINARY value is its bytes in hexadecimal, two upper-case digits each, between
// brackets and separated by spaces ("[01 02 FF]"; "[]" for no bytes), as Spark's Dataset.show
// prints a BinaryType value. A BINARY value nested in a STRUCT, ARRAY or MAP keeps Text's
// JSON form, base64.
func Show(t Type, v any) string {
	if x, ok := v.(string); ok && t.IsBinary() {
		b := make([]byte, 0, 2+3*len(x))
		b = append(b, '[')
		for i := 0; i < len(x); i++ {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, "0123456789ABCDEF"[x[i]>>4], "0123456789ABCDEF"[x[i]&15])
		}
		return string(append(b, ']'))
	}
	return OutputText(t, v)
}

// OutputText is Text for what the CLI prints (`show` in csv and table): a DOUBLE or FLOAT, at any
// depth, as Java's Double.toString or Float.toString writes it (AppendJavaFloat), as Spark's CSV
// writer and Dataset.show print one (2.0, 1.0E20, NaN).
func OutputText(t Type, v any) string {
	switch x := v.(type) {
	case float64:
		return string(AppendJavaFloat(nil, x, t.floatBits()))
	case []any, Map:
		return string(AppendOutputJSON(nil, t, v))
	}
	return Text(t, v)
}

// floatBits is 32 for a FLOAT column (Storage float), whose values print as the shortest text
// of their float32, else 64.
func (t Type) floatBits() int {
	if t.Storage == StorageFloat {
		return 32
	}
	return 64
}

// Compare orders two non-NULL values of the same column type: -1, 0 or +1. NULL sorts first.
// Strings compare by bytes (UTF-8 code points), doubles numerically (NaN above all and equal to
// NaN, -0.0 equal to 0.0, as in Spark), STRUCTs field by field, ARRAYs element by element and
// then by length (a prefix first, as Spark orders arrays), MAPs entry by entry (key, then value)
// and then by length (Spark does not order maps; this order only makes sorting deterministic).
func Compare(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		default:
			return 1
		}
	}
	switch x := a.(type) {
	case int64:
		return cmp3(x, b.(int64))
	case int32:
		return cmp3(x, b.(int32))
	case string:
		return strings.Compare(x, b.(string))
	case float64:
		return compareDouble(x, b.(float64))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		default:
			return 1
		}
	case Decimal:
		return cmp3(x, b.(Decimal))
	case Decimal128:
		return x.Cmp(b.(Decimal128))
	case Date:
		return cmp3(x, b.(Date))
	case Timestamp:
		return cmp3(x, b.(Timestamp))
	case []any: // a STRUCT field by field, or an ARRAY element by element
		y := b.([]any)
		if c := CompareTuple(x[:min(len(x), len(y))], y); c != 0 {
			return c
		}
		return cmp3(int64(len(x)), int64(len(y)))
	case Map:
		y := b.(Map)
		for i := range min(len(x), len(y)) {
			if c := Compare(x[i].Key, y[i].Key); c != 0 {
				return c
			}
			if c := Compare(x[i].Value, y[i].Value); c != 0 {
				return c
			}
		}
		return cmp3(int64(len(x)), int64(len(y)))
	}
	panic(fmt.Sprintf("schema.Compare: unsupported value %T", a))
}

// CompareTuple compares two value lists left to right, as Spark compares structs.
func CompareTuple(a, b []any) int {
	for i := range a {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// compareDouble orders DOUBLEs as Spark does: NaN equals NaN and is above every other value
// (including +Inf), and -0.0 equals 0.0; so a NaN sequence_by value has one place, whatever the
// arrival order.
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	aNaN, bNaN := math.IsNaN(a), math.IsNaN(b)
	switch {
	case aNaN && bNaN:
		return 0
	case aNaN:
		return 1
	}
	return -1
}

func cmp3[T int64 | int32 | Decimal | Date | Timestamp](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AppendKey appends a canonical binary encoding of values to buf, for use as a map key: two value
// lists encode equal exactly when they are equal value by value (NULL included).
func AppendKey(buf []byte, vals []any) []byte {
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			buf = append(buf, 0)
		case int64:
			buf = binary.LittleEndian.AppendUint64(append(buf, 1), uint64(x))
		case int32:
			buf = binary.LittleEndian.AppendUint32(append(buf, 2), uint32(x))
		case string:
			buf = binary.AppendUvarint(append(buf, 3), uint64(len(x)))
			buf = append(buf, x...)
		case float64:
			buf = binary.LittleEndian.AppendUint64(append(buf, 4), math.Float64bits(x))
		case bool:
			if x {
				buf = append(buf, 5, 1)
			} else {
				buf = append(buf, 5, 0)
			}
		case Decimal:
			buf = binary.LittleEndian.AppendUint64(append(buf, 6), uint64(x))
		case Date:
			buf = binary.LittleEndian.AppendUint32(append(buf, 7), uint32(x))
		case Timestamp:
			buf = binary.LittleEndian.AppendUint64(append(buf, 8), uint64(x))
		case []any: // a STRUCT or an ARRAY: its length, then its values
			buf = binary.AppendUvarint(append(buf, 9), uint64(len(x)))
			buf = AppendKey(buf, x)
		case Map:
			buf = binary.AppendUvarint(append(buf, 10), uint64(len(x)))
			for _, e := range x {
				buf = AppendKey(buf, []any{e.Key, e.Value})
			}
		case Decimal128:
			buf = binary.LittleEndian.AppendUint64(append(buf, 11), uint64(x.Hi))
			buf = binary.LittleEndian.AppendUint64(buf, x.Lo)
		default:
			panic(fmt.Sprintf("schema.AppendKey: unsupported value %T", v))
		}
	}
	return buf
}

// Equal reports whether two values are equal (NULL equals NULL).
func Equal(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return Compare(a, b) == 0
}
