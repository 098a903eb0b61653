package schema

import (
	"strings"
	"testing"
	"time"
)

// TestParseReaderTimestamp: the TIMESTAMP texts of a JSON or CSV file as Spark's readers read them
// without a timestampFormat (DateTimeUtils.stringToTimestamp in the session time zone, UTC), the
// cases of Spark's DateTimeUtilsSuite "string to timestamp", "nanoseconds truncation",
// "SPARK-35780: support full range of timestamp string" and "SPARK-15379" with their expected
// instants, and forms files hold: one-digit fields, hours alone, offsets without colon or
// minutes, a zone of a region across its clock changes, "GMT" removed when the text fails
// with it (cleanLegacyTimestampStr). Refused: what Spark refuses, a time without a date (today's
// in Spark), and instants outside the years 1 to 9999 that Spark takes but the type does not hold.
func TestParseReaderTimestamp(t *testing.T) {
	t.Parallel()
	// at is the instant of a wall clock at offset east seconds east of UTC.
	at := func(y int, mo time.Month, d, h, mi, s, micro, east int) Timestamp {
		return Timestamp(time.Date(y, mo, d, h, mi, s, micro*1000, time.FixedZone("", east)).UnixMicro())
	}
	const hour, minute = 3600, 60
	valid := []struct {
		text string
		want Timestamp
	}{
		// DateTimeUtilsSuite "string to timestamp", in the session time zone UTC
		{"1969-12-31 16:00:00", at(1969, 12, 31, 16, 0, 0, 0, 0)},
		{"0001", at(1, 1, 1, 0, 0, 0, 0, 0)},
		{"2015-03", at(2015, 3, 1, 0, 0, 0, 0, 0)},
		{"2015-03-18", at(2015, 3, 18, 0, 0, 0, 0, 0)},
		{"2015-03-18 ", at(2015, 3, 18, 0, 0, 0, 0, 0)},
		{" 2015-03-18", at(2015, 3, 18, 0, 0, 0, 0, 0)},
		{" 2015-03-18 ", at(2015, 3, 18, 0, 0, 0, 0, 0)},
		{"2015-03-18 12:03:17", at(2015, 3, 18, 12, 3, 17, 0, 0)},
		{"2015-03-18T12:03:17", at(2015, 3, 18, 12, 3, 17, 0, 0)},
		{"2015-03-18T12:03:17-13:53", at(2015, 3, 18, 12, 3, 17, 0, -13*hour-53*minute)},
		{"2015-03-18T12:03:17GMT-13:53", at(2015, 3, 18, 12, 3, 17, 0, -13*hour-53*minute)},
		{"2015-03-18T12:03:17Z", at(2015, 3, 18, 12, 3, 17, 0, 0)},
		{"2015-03-18 12:03:17Z", at(2015, 3, 18, 12, 3, 17, 0, 0)},
		{"2015-03-18 12:03:17UTC", at(2015, 3, 18, 12, 3, 17, 0, 0)},
		{"2015-03-18T12:03:17-1:0", at(2015, 3, 18, 12, 3, 17, 0, -hour)},
		{"2015-03-18T12:03:17-01:00", at(2015, 3, 18, 12, 3, 17, 0, -hour)},
		{"2015-03-18T12:03:17GMT-01:00", at(2015, 3, 18, 12, 3, 17, 0, -hour)},
		{"2015-03-18T12:03:17+07:30", at(2015, 3, 18, 12, 3, 17, 0, 7*hour+30*minute)},
		{"2015-03-18T12:03:17 GMT+07:30", at(2015, 3, 18, 12, 3, 17, 0, 7*hour+30*minute)},
		{"2015-03-18T12:03:17+07:03", at(2015, 3, 18, 12, 3, 17, 0, 7*hour+3*minute)},
		{"2015-03-18T12:03:17GMT+07:03", at(2015, 3, 18, 12, 3, 17, 0, 7*hour+3*minute)},
		{"2015-03-18 12:03:17.123", at(2015, 3, 18, 12, 3, 17, 123000, 0)},
		{"2015-03-18T12:03:17.123", at(2015, 3, 18, 12, 3, 17, 123000, 0)},
		{"2015-03-18T12:03:17.456Z", at(2015, 3, 18, 12, 3, 17, 456000, 0)},
		{"2015-03-18 12:03:17.456Z", at(2015, 3, 18, 12, 3, 17, 456000, 0)},
		{"2015-03-18 12:03:17.456 UTC", at(2015, 3, 18, 12, 3, 17, 456000, 0)},
		{"2015-03-18T12:03:17.123-1:0", at(2015, 3, 18, 12, 3, 17, 123000, -hour)},
		{"2015-03-18T12:03:17.123-01:00", at(2015, 3, 18, 12, 3, 17, 123000, -hour)},
		{"2015-03-18T12:03:17.123 GMT-01:00", at(2015, 3, 18, 12, 3, 17, 123000, -hour)},
		{"2015-03-18T12:03:17.123+07:30", at(2015, 3, 18, 12, 3, 17, 123000, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.123 GMT+07:30", at(2015, 3, 18, 12, 3, 17, 123000, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.123GMT+07:30", at(2015, 3, 18, 12, 3, 17, 123000, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.123121+7:30", at(2015, 3, 18, 12, 3, 17, 123121, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.123121 GMT+0730", at(2015, 3, 18, 12, 3, 17, 123121, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.12312+7:30", at(2015, 3, 18, 12, 3, 17, 123120, 7*hour+30*minute)},
		{"2015-03-18T12:03:17.12312 UT+07:30", at(2015, 3, 18, 12, 3, 17, 123120, 7*hour+30*minute)},
		{"2011-05-06 07:08:09.1000", at(2011, 5, 6, 7, 8, 9, 100000, 0)},
		{"2015-03-18T12:03:17.123456789+0:00", at(2015, 3, 18, 12, 3, 17, 123456, 0)},
		{"2015-03-18T12:03:17.123456789 UTC+0", at(2015, 3, 18, 12, 3, 17, 123456, 0)},
		{"2015-03-18T12:03:17.123456789GMT+00:00", at(2015, 3, 18, 12, 3, 17, 123456, 0)},
		// Moscow keeps UTC+3 all year since 2014-10-26.
		{"2015-03-18T12:03:17.123456 Europe/Moscow", at(2015, 3, 18, 12, 3, 17, 123456, 3*hour)},
		// "SPARK-35780: support full range of timestamp string", within the years 1 to 9999
		{"02015-03-18 16:00:00", at(2015, 3, 18, 16, 0, 0, 0, 0)},
		{"000001", at(1, 1, 1, 0, 0, 0, 0, 0)},
		{"00238", at(238, 1, 1, 0, 0, 0, 0, 0)},
		// "nanoseconds truncation"
		{"2015-01-02 00:00:00.123456789", at(2015, 1, 2, 0, 0, 0, 123456, 0)},
		{"2015-01-02 00:00:00.100000009", at(2015, 1, 2, 0, 0, 0, 100000, 0)},
		{"2015-01-02 00:00:00.000050000", at(2015, 1, 2, 0, 0, 0, 50, 0)},
		{"2015-01-02 00:00:00.12005", at(2015, 1, 2, 0, 0, 0, 120050, 0)},
		{"2015-01-02 00:00:00.100", at(2015, 1, 2, 0, 0, 0, 100000, 0)},
		{"2015-01-02 00:00:00.000456789", at(2015, 1, 2, 0, 0, 0, 456, 0)},
		{"1950-01-02 00:00:00.000456789", at(1950, 1, 2, 0, 0, 0, 456, 0)},
		// Forms of files: one-digit fields, no seconds or minutes (then no zone), an empty
		// fraction, offsets of hours alone, without colon or with seconds, a sign on the year.
		{"2024-1-1 9:05:00", at(2024, 1, 1, 9, 5, 0, 0, 0)},
		{"2024-01-01 9:5:7", at(2024, 1, 1, 9, 5, 7, 0, 0)},
		{"2024-01-01T10:00", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"2024-01-01 10", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"2024-01-01T10:00:00.", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"2024-01-01T10:00:00.Z", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"2024-01-01T10:00:00.123456789", at(2024, 1, 1, 10, 0, 0, 123456, 0)},
		{"2024-01-01T10:00:00.1234567891234", at(2024, 1, 1, 10, 0, 0, 123456, 0)},
		{"2024-01-01T10:00:00+0100", at(2024, 1, 1, 10, 0, 0, 0, hour)},
		{"2024-01-01T10:00:00+01", at(2024, 1, 1, 10, 0, 0, 0, hour)},
		{"2024-01-01T10:00:00-5", at(2024, 1, 1, 10, 0, 0, 0, -5*hour)},
		{"2024-01-01T10:00:00+01:00:30", at(2024, 1, 1, 10, 0, 0, 0, hour+30)},
		{"2024-01-01T10:00:00-013015", at(2024, 1, 1, 10, 0, 0, 0, -hour-30*minute-15)},
		{"2024-01-01T10:00:00+18:00", at(2024, 1, 1, 10, 0, 0, 0, 18*hour)},
		{"2024-01-01T10:00:00 GMT", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"2024-01-01T10:00:00UT", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"+2024-01-01T10:00:00Z", at(2024, 1, 1, 10, 0, 0, 0, 0)},
		{"\t2024-01-31T10:00:00Z\r\n", at(2024, 1, 31, 10, 0, 0, 0, 0)},
		{"2024-02-29T23:59:59.999999Z", at(2024, 2, 29, 23, 59, 59, 999999, 0)},
		{"9999-12-31T23:59:59.999999Z", at(9999, 12, 31, 23, 59, 59, 999999, 0)},
		{"0001-01-01T00:00:00Z", at(1, 1, 1, 0, 0, 0, 0, 0)},
		// Short ids (java.time.ZoneId.SHORT_IDS): EST a fixed offset, PST Los Angeles, on
		// daylight time (UTC-7) on 2015-03-18.
		{"2015-03-18T12:03:17 EST", at(2015, 3, 18, 12, 3, 17, 0, -5*hour)},
		{"2015-03-18T12:03:17PST", at(2015, 3, 18, 12, 3, 17, 0, -7*hour)},
		{"2024-01-31T10:00:00 CET", at(2024, 1, 31, 10, 0, 0, 0, hour)},
		// Regions across their clock changes, as java.time.ZonedDateTime.of: Paris skips 02:00
		// to 03:00 on 2024-03-31 (02:30 takes the offset before, +1) and shows 02:00 to 03:00
		// twice on 2024-10-27 (02:30 is the earlier, at +2); Los Angeles skips 02:00 to 03:00 on
		// 2024-03-10 (02:30 at -8) and shows 01:00 to 02:00 twice on 2024-11-03 (01:30 at -7).
		{"2024-03-31T02:30:00 Europe/Paris", at(2024, 3, 31, 1, 30, 0, 0, 0)},
		{"2024-10-27T02:30:00 Europe/Paris", at(2024, 10, 27, 0, 30, 0, 0, 0)},
		{"2024-10-27T03:00:00 Europe/Paris", at(2024, 10, 27, 2, 0, 0, 0, 0)},
		{"2024-07-01T12:00:00Europe/Paris", at(2024, 7, 1, 10, 0, 0, 0, 0)},
		{"2024-03-10T02:30:00 America/Los_Angeles", at(2024, 3, 10, 10, 30, 0, 0, 0)},
		{"2024-11-03T01:30:00 America/Los_Angeles", at(2024, 11, 3, 8, 30, 0, 0, 0)},
		{"2024-11-03T02:00:00 America/Los_Angeles", at(2024, 11, 3, 10, 0, 0, 0, 0)},
		// "GMT" removed when the text fails with it (cleanLegacyTimestampStr).
		{"2015-03-18 GMT", at(2015, 3, 18, 0, 0, 0, 0, 0)},
		{"2024-01-31T10:00:00+01:00GMT", at(2024, 1, 31, 10, 0, 0, 0, hour)},
	}
	for _, tc := range valid {
		if got, err := ParseReaderTimestamp(tc.text); err != nil || got != tc.want {
			t.Errorf("ParseReaderTimestamp(%q) = %s, %v; want %s", tc.text, FormatTimestamp(got), err, FormatTimestamp(tc.want))
		}
	}

	invalid := []struct {
		text, why string // why: a part of the error
	}{
		// DateTimeUtilsSuite: Spark reads none of these
		{"238", "is not a timestamp"},
		{"2015-03-18 123142", "is not a timestamp"},
		{"2015-03-18T123123", "is not a timestamp"},
		{"2015-03-18X", "is not a timestamp"},
		{"2015/03/18", "is not a timestamp"},
		{"2015.03.18", "is not a timestamp"},
		{"20150318", "is not a timestamp"},
		{"2015-031-8", "is not a timestamp"},
		{"015-01-18", "is not a timestamp"},
		{"2015-03-18T12:03.17-20:0", "is not a timestamp"},
		{"2015-03-18T12:03.17-0:70", "is not a timestamp"},
		{"2015-03-18T12:03.17-1:0:0", "is not a timestamp"},
		{"1999 08 01", "is not a timestamp"},
		{"1999-08 01", "is not a timestamp"},
		{"1999 08", "is not a timestamp"},
		{"", "is not a timestamp"},
		{"    ", "is not a timestamp"},
		{"+", "is not a timestamp"},
		{"+12:12:12", "is not a timestamp"},
		{"-12:12:12", "is not a timestamp"},
		{"4294967297", "is not a timestamp"},
		{"2021-4294967297-11", "is not a timestamp"},
		{"4294967297:30:00", "is not a timestamp"},
		{"2021-11-4294967297T12:30:00", "is not a timestamp"},
		{"2021-01-01T12:4294967297:00", "is not a timestamp"},
		{"2021-01-01T12:30:4294967297", "is not a timestamp"},
		{"2021-01-01T12:30:4294967297.123456", "is not a timestamp"},
		{"2021-01-01T12:30:4294967297+07:30", "is not a timestamp"},
		{"2021-01-01T12:30:4294967297UTC", "is not a timestamp"},
		{"2021-01-01T12:30:4294967297+4294967297:30", "is not a timestamp"},
		{"-290308-12-21T19:59:05.224191Z", "outside the years 1 to 9999"},
		{"2015-02-29 00:00:00", "does not exist"},
		{"2015-04-31 00:00:00", "does not exist"},
		{"2015-02-29", "does not exist"},
		{"2015-04-31", "does not exist"},
		// A separator with no time after it (SPARK-36286).
		{"2015-03-18T", "is not a timestamp"},
		{"2015-03-18T10:", "is not a timestamp"},
		// A zone on no seconds: after the minutes, the hours or the date.
		{"2024-01-01T10:00Z", "follows the hours or minutes, and Spark's readers take one only after the seconds"},
		{"2024-01-01T10:00+01:00", "follows the hours or minutes"},
		{"2024-01-01T10Z", "follows the hours or minutes"},
		{"2024-01-01T10:00 UTC", "is not a timestamp (e.g."},
		{"2020-10-01Z", "is not a timestamp"},
		{"2020-01-01+05:30", "is not a timestamp"},
		{"2020-10-01 UTC", "is not a timestamp"},
		{"0002020-01-01 00:00:00", "is not a timestamp"}, // a year of 7 digits (a DATE's may have 7)
		// Letters in another case, which java.time does not take.
		{"2024-01-31t10:00:00Z", "is not a timestamp"},
		{"2024-01-31T10:00:00z", `time zone "z"`},
		{"2024-01-31T10:00:00 utc", `time zone "utc"`},
		// Zones java.time.ZoneId.of refuses: beyond 18 hours, bad digits, unknown regions, and
		// names of Go's database that are no zone of java.time's.
		{"2024-01-31T10:00:00+19:00", `time zone "+19:00"`},
		{"2024-01-31T10:00:00+18:30", `time zone "+18:30"`},
		{"2024-01-31T10:00:00+01:60", `time zone "+01:60"`},
		{"2024-01-31T10:00:00+01:0:0", `time zone "+01:0:0"`},
		{"2024-01-31T10:00:00+123", `time zone "+123"`},
		{"2024-01-31T10:00:00 Nowhere/City", `time zone "Nowhere/City"`},
		{"2024-01-31T10:00:00 Local", `time zone "Local"`},
		{"2024-01-31T10:00:00 posix/Europe/Paris", `time zone "posix/Europe/Paris"`},
		{"2024-01-31T10:00:00 Europe/../UTC", `time zone "Europe/../UTC"`},
		{"2024-01-31T10:00:00.123.456", `time zone ".456"`},
		// Fields out of their range.
		{"2024-13-01", "does not exist"},
		{"2024-00-10", "does not exist"},
		{"2024-01-00", "does not exist"},
		{"2024-01-31T24:00:00Z", "does not exist"},
		{"2024-01-31T10:60:00Z", "does not exist"},
		{"2024-01-31T10:00:60Z", "does not exist"},
		// A time without a date, which Spark reads as on the day the query runs.
		{"18:12:15", "without a date"},
		{"T18:12:15.12312+7:30", "without a date"},
		{"T18:12:15.12312 UTC+07:30", "without a date"},
		{"18:12:15.12312+7:30", "without a date"},
		{"18:12:15.12312 GMT+07:30", "without a date"},
		// Instants Spark takes (SPARK-35780) outside the years 1 to 9999 a TIMESTAMP holds.
		{"-1969-12-31 16:00:00", "outside the years 1 to 9999"},
		{"-000001", "outside the years 1 to 9999"},
		{"99999-03-01T12:03:17", "outside the years 1 to 9999"},
		{"294247-01-10T04:00:54.775807Z", "outside the years 1 to 9999"},
		{"-290308-12-21T19:59:05.224192Z", "outside the years 1 to 9999"},
		{"0000-12-31T23:59:59Z", "outside the years 1 to 9999"},
		{"0001-01-01T00:00:00+00:01", "outside the years 1 to 9999"},
		{"9999-12-31T23:59:59-00:01", "outside the years 1 to 9999"},
	}
	for _, tc := range invalid {
		got, err := ParseReaderTimestamp(tc.text)
		if err == nil {
			t.Errorf("ParseReaderTimestamp(%q) = %s, want an error", tc.text, FormatTimestamp(got))
			continue
		}
		if !strings.Contains(err.Error(), tc.why) || !strings.HasPrefix(err.Error(), `"`) {
			t.Errorf("ParseReaderTimestamp(%q): error %q, want one quoting the text and saying %q", tc.text, err, tc.why)
		}
	}
}

// TestParseReaderTimestampFastPath: the RFC 3339 fast path gives what the scanner gives, for the
// texts it takes, and leaves the others to it.
func TestParseReaderTimestampFastPath(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"2024-01-31T10:00:00Z", "2024-01-31T10:00:00.5Z", "2024-01-31T10:00:00.123456789Z",
		"2024-01-31T10:00:00.1234567891Z", "2024-01-31T10:00:00+02:00", "2024-01-31T10:00:00-18:00",
		"2024-01-31T10:00:00+18:01", "2024-01-31T10:00:00.Z", "2024-02-30T10:00:00Z", "0000-01-01T00:00:00Z",
		"0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999999Z", "2024-01-31T10:00:00z", "2024-01-31T10:00:00+0200",
	} {
		fast, ok := rfc3339Timestamp(s)
		if !ok {
			continue
		}
		if slow, fault, _ := scanTimestampText(s); fault != faultNone || slow != fast {
			t.Errorf("%q: fast path %s, scanner %s (fault %d)", s, FormatTimestamp(fast), FormatTimestamp(slow), fault)
		}
	}
}
