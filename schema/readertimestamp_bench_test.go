package schema

import "testing"

// readerTimestampTexts are TIMESTAMP texts of a JSON or CSV file: RFC 3339, the common case, with
// and without fraction and offset.
var readerTimestampTexts = []string{
	"2024-01-31T10:00:00Z",
	"2024-01-31T10:00:00.123456Z",
	"2024-01-31T12:00:00+02:00",
	"2024-01-31T10:00:00.5-05:30",
}

// BenchmarkParseTimestampRFC3339 reads RFC 3339 text with ParseTimestamp.
func BenchmarkParseTimestampRFC3339(b *testing.B) {
	for b.Loop() {
		for _, s := range readerTimestampTexts {
			if _, err := ParseTimestamp(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkParseReaderTimestamp reads the same texts with ParseReaderTimestamp, as the JSON and
// CSV readers do, and one with a region zone, which is looked up once and then cached.
func BenchmarkParseReaderTimestamp(b *testing.B) {
	b.Run("RFC 3339", func(b *testing.B) {
		for b.Loop() {
			for _, s := range readerTimestampTexts {
				if _, err := ParseReaderTimestamp(s); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("region", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseReaderTimestamp("2024-01-31 10:00:00 Europe/Paris"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
