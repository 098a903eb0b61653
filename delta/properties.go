package delta

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Table properties this package reads (Delta PROTOCOL.md, "Change Metadata", and the Delta Lake
// documentation's table properties), and the ones Tributary adds in the style of Delta Live
// Tables.
const (
	// ConfigCheckpointInterval is how many commits apart checkpoints are written (default 10).
	ConfigCheckpointInterval = "delta.checkpointInterval"
	// ConfigDeletedFileRetention is how long a removed file stays for time travel and concurrent
	// readers before VACUUM may delete it: an interval such as "interval 7 days" (the default).
	ConfigDeletedFileRetention = "delta.deletedFileRetentionDuration"
	// ConfigLogRetention is how long commits and checkpoints stay in _delta_log before metadata
	// cleanup (Table.CleanupExpiredLogs) may delete them: an interval such as "interval 30 days"
	// (the default). Time travel reaches back about as far.
	ConfigLogRetention = "delta.logRetentionDuration"
	// ConfigExpiredLogCleanup turns metadata cleanup off when "false" (default "true").
	ConfigExpiredLogCleanup = "delta.enableExpiredLogCleanup"
	// ConfigTargetFileSize is the size in bytes OPTIMIZE bin-packs files to and a DataWriter
	// (WriteData, ingest batches) finishes its files at (default 128 MiB).
	ConfigTargetFileSize = "delta.targetFileSize"
	// ConfigWriteStatsAsJSON says whether checkpoints keep add.stats (default true).
	ConfigWriteStatsAsJSON = "delta.checkpoint.writeStatsAsJson"

	// ConfigAutoOptimize turns automatic compaction of small files on ("true", the default) or
	// off ("false"), as the Delta Live Tables property of the same name does.
	ConfigAutoOptimize = "pipelines.autoOptimize.managed"
	// ConfigAutoOptimizeMinFiles is how many small files (below the target file size) a table
	// (or one partition of it) must collect before automatic compaction runs (default 50, the
	// minNumFiles of Delta's auto compaction).
	ConfigAutoOptimizeMinFiles = "pipelines.autoOptimize.minNumFiles"
)

// Defaults of the properties above.
const (
	DefaultCheckpointInterval   = 10
	DefaultDeletedFileRetention = 7 * 24 * time.Hour
	DefaultLogRetention         = 30 * 24 * time.Hour
	DefaultTargetFileSize       = 128 << 20
	DefaultAutoOptimizeMinFiles = 50
)

// CheckpointInterval returns delta.checkpointInterval, or DefaultCheckpointInterval when it is
// unset or not a positive integer.
func (m Metadata) CheckpointInterval() int64 {
	if n, err := strconv.ParseInt(strings.TrimSpace(m.Configuration[ConfigCheckpointInterval]), 10, 64); err == nil && n > 0 {
		return n
	}
	return DefaultCheckpointInterval
}

// DeletedFileRetention returns delta.deletedFileRetentionDuration, or
// DefaultDeletedFileRetention when it is unset. A value that does not parse is an error naming
// the property.
func (m Metadata) DeletedFileRetention() (time.Duration, error) {
	return m.interval(ConfigDeletedFileRetention, DefaultDeletedFileRetention)
}

// LogRetention returns delta.logRetentionDuration, or DefaultLogRetention when it is unset. A
// value that does not parse is an error naming the property.
func (m Metadata) LogRetention() (time.Duration, error) {
	return m.interval(ConfigLogRetention, DefaultLogRetention)
}

// interval returns the interval table property key (ParseInterval), or def when it is unset. A
// value that does not parse is an error naming the property.
func (m Metadata) interval(key string, def time.Duration) (time.Duration, error) {
	v, ok := m.Configuration[key]
	if !ok {
		return def, nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return 0, fmt.Errorf("delta: table property %s: %w", key, err)
	}
	return d, nil
}

// ExpiredLogCleanup reports whether metadata cleanup is on: delta.enableExpiredLogCleanup is
// not "false".
func (m Metadata) ExpiredLogCleanup() bool {
	return !strings.EqualFold(strings.TrimSpace(m.Configuration[ConfigExpiredLogCleanup]), "false")
}

// TargetFileSize returns delta.targetFileSize in bytes ("134217728", or with a unit: "128mb"),
// or DefaultTargetFileSize when it is unset or does not parse.
func (m Metadata) TargetFileSize() int64 {
	if n, err := ParseSize(m.Configuration[ConfigTargetFileSize]); err == nil && n > 0 {
		return n
	}
	return DefaultTargetFileSize
}

// AutoOptimize reports whether automatic compaction is on (pipelines.autoOptimize.managed is
// not "false") and the number of small files that triggers it.
func (m Metadata) AutoOptimize() (bool, int) {
	if strings.EqualFold(strings.TrimSpace(m.Configuration[ConfigAutoOptimize]), "false") {
		return false, 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(m.Configuration[ConfigAutoOptimizeMinFiles])); err == nil && n >= 2 {
		return true, n
	}
	return true, DefaultAutoOptimizeMinFiles
}

// ParseInterval reads a duration the way Delta table properties write them: "interval 7 days",
// "interval 1 hour", "30 days", "7d", "2w", or a Go duration ("168h", "90m", "0s"). Units: second(s),
// minute(s), hour(s), day(s), week(s). A negative or unreadable value is an error.
func ParseInterval(s string) (time.Duration, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSpace(strings.TrimPrefix(t, "interval"))
	if n := len(t); n > 1 && (t[n-1] == 'd' || t[n-1] == 'w') && strings.Trim(t[:n-1], "0123456789") == "" {
		t = t[:n-1] + map[byte]string{'d': " days", 'w': " weeks"}[t[n-1]] // "7d", "2w": units Go durations lack
	}
	if d, err := time.ParseDuration(t); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return d, nil
	}
	f := strings.Fields(t)
	if len(f) != 2 {
		return 0, fmt.Errorf("%q is not an interval such as \"interval 7 days\" or \"168h\"", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not an interval such as \"interval 7 days\" or \"168h\"", s)
	}
	unit := map[string]time.Duration{
		"second": time.Second, "minute": time.Minute, "hour": time.Hour,
		"day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	}[strings.TrimSuffix(f[1], "s")]
	if unit == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (use seconds, minutes, hours, days or weeks)", s, f[1])
	}
	return time.Duration(n) * unit, nil
}

// ParseSize reads a size in bytes: "134217728", or a number with a unit kb, mb, gb (powers of
// 1024; "128mb").
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size in bytes (e.g. 134217728 or 128mb)", s)
	}
	return n * mul, nil
}
