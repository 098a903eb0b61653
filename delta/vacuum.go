package delta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tributary/internal/fault"
)

// ErrRetentionTooShort is returned (wrapped) by Vacuum when the retention asked for is shorter
// than the table's delta.deletedFileRetentionDuration: files a reader of a recent version still
// needs could be deleted. Lower the table property to vacuum with a shorter retention, as Delta
// asks. Test it with errors.Is.
var ErrRetentionTooShort = errors.New("delta: the retention is shorter than the table's delta.deletedFileRetentionDuration")

// VacuumOptions tune Vacuum.
type VacuumOptions struct {
	// Retain is how far back versions stay readable; negative means the table's
	// delta.deletedFileRetentionDuration (default 7 days). It may not be shorter than that.
	Retain time.Duration
	// DryRun lists the files Vacuum would delete without deleting them.
	DryRun bool
	// Now is the current time (tests); zero means time.Now().
	Now time.Time
	// KeepFromVersion, when >= 0, keeps every data and change data file that commits from this
	// version on added, live or not, and every file of the version before it: a reader that has
	// not read those versions yet (a downstream flow) still needs them.
	KeepFromVersion int64
}

// VacuumResult lists the files Vacuum deleted (or would delete, for a dry run): paths relative
// to the table folder, slash-separated, sorted; Bytes is their total size.
type VacuumResult struct {
	Files  []string
	Bytes  int64
	Retain time.Duration
}

// Vacuum deletes the files in the table folder that no snapshot within the retention window
// needs, as Delta's VACUUM does: a file (data, change data or deletion vector file) is deleted
// when it is not a live file of the latest snapshot or the deletion vector file of one, not a
// file removed less than Retain ago (its tombstone's deletionTimestamp) or the deletion vector
// file of such a remove, not added by a version from opts.KeepFromVersion on nor a file of the
// version before it (with its deletion vector file), and its modification time is older than
// Retain (so files of a commit in progress, and change data files of recent versions, stay). It
// walks the table folder except _delta_log and names starting with "." or "_" other than
// _change_data and the partition folders of columns so named (a ".…tmp" file left by a crashed
// write is deleted once older than Retain), and removes partition folders it leaves empty. It
// never deletes a file the latest snapshot reads, and it does not write a commit. Deletion
// vector files are deletion_vector_<uuid>.bin in the table folder or in the folder of their
// random prefix (Delta PROTOCOL.md, "Deletion Vector Descriptor Schema"). Errors:
// ErrRetentionTooShort, a deletion vector descriptor whose file name cannot be derived. In
// _delta_log it deletes only the temporary files of commits and checkpoints that a crashed
// writer left (crashedLogTemps).
func (t *Table) Vacuum(opts VacuumOptions) (VacuumResult, error) {
	res := VacuumResult{}
	snap, err := t.Snapshot(-1)
	if err != nil {
		return res, err
	}
	tableRetain, err := snap.Metadata.DeletedFileRetention()
	if err != nil {
		return res, err
	}
	retain := opts.Retain
	if retain < 0 {
		retain = tableRetain
	}
	if retain < tableRetain {
		return res, fmt.Errorf("vacuum %s retaining %s: %w (%s); set the table property %s to %q or less to allow it",
			t.Dir, retain, ErrRetentionTooShort, tableRetain, ConfigDeletedFileRetention, fmt.Sprintf("interval %d seconds", int64(retain/time.Second)))
	}
	res.Retain = retain
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	cutoff := now.Add(-retain)

	keep := map[string]bool{} // absolute local paths
	live := map[string]bool{} // absolute local paths of the latest snapshot's files
	keepAction := func(p string) error {
		name, err := localPath(t.Dir, p)
		if err != nil {
			return fmt.Errorf("delta: vacuum %s: %w", t.Dir, err)
		}
		keep[filepath.Clean(name)] = true
		return nil
	}
	// keepDV keeps the file of a deletion vector (storage types "u" and "p"; an inline DV has
	// none), and marks it live when live is set.
	keepDV := func(dv *DeletionVector, isLive bool) error {
		if dv == nil || dv.StorageType == DVStorageInline {
			return nil
		}
		rel, err := dv.FilePath()
		if err != nil {
			return fmt.Errorf("delta: vacuum %s: %w", t.Dir, err)
		}
		if err := keepAction(rel); err != nil {
			return err
		}
		if isLive {
			name, _ := localPath(t.Dir, rel)
			live[filepath.Clean(name)] = true
		}
		return nil
	}
	for _, f := range snap.Files {
		if err := keepAction(f.Path); err != nil {
			return res, err
		}
		name, _ := localPath(t.Dir, f.Path)
		live[filepath.Clean(name)] = true
		if err := keepDV(f.DeletionVector, true); err != nil {
			return res, err
		}
	}
	for _, r := range snap.Tombstones {
		if r.DeletionTimestamp > cutoff.UnixMilli() {
			if err := keepAction(r.Path); err != nil {
				return res, err
			}
			if err := keepDV(r.DeletionVector, false); err != nil {
				return res, err
			}
		}
	}
	if opts.KeepFromVersion > 0 && opts.KeepFromVersion <= snap.Version+1 {
		// The table as the reader last read it: a reader of whole versions (APPLY CHANGES FROM
		// SNAPSHOT) reads the files still live at its next version, and the change data feed
		// of a commit without change data files reads the files it removes.
		before, err := t.Snapshot(opts.KeepFromVersion - 1)
		if err != nil {
			return res, fmt.Errorf("delta: vacuum %s: the version before %d, which a reader has not read yet: %w", t.Dir, opts.KeepFromVersion, err)
		}
		for _, f := range before.Files {
			if err := keepAction(f.Path); err != nil {
				return res, err
			}
			if err := keepDV(f.DeletionVector, false); err != nil {
				return res, err
			}
		}
	}
	if opts.KeepFromVersion >= 0 {
		for v := opts.KeepFromVersion; v <= snap.Version; v++ {
			c, err := t.ReadCommit(v)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return res, err
			}
			for _, a := range c.Adds {
				if err := keepAction(a.Path); err != nil {
					return res, err
				}
				if err := keepDV(a.DeletionVector, false); err != nil {
					return res, err
				}
			}
			for _, d := range c.CDCs {
				if err := keepAction(d.Path); err != nil {
					return res, err
				}
			}
		}
	}

	// A partition folder "col=value" is not hidden though the column's name starts with "_" or
	// "." (as Delta's VACUUM tells them apart).
	var partitionDirs []string
	for _, c := range snap.Metadata.PartitionColumns {
		partitionDirs = append(partitionDirs, escapePartitionName(c)+"=")
	}
	root := filepath.Clean(t.Dir)
	var dirs []string
	err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		name := de.Name()
		hidden := strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
		if de.IsDir() {
			if hidden && name != ChangeDataDir && !slices.ContainsFunc(partitionDirs, func(pre string) bool { return strings.HasPrefix(name, pre) }) {
				return filepath.SkipDir
			}
			dirs = append(dirs, p)
			return nil
		}
		if hidden && !(strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp")) {
			return nil
		}
		if keep[p] {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !info.ModTime().Before(cutoff) {
			return nil
		}
		if live[p] { // keep covers it; this is the invariant, checked once more
			return fmt.Errorf("delta: vacuum %s: internal error: %s is live", t.Dir, p)
		}
		rel, _ := filepath.Rel(root, p)
		res.Files = append(res.Files, filepath.ToSlash(rel))
		res.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("delta: vacuum %s: %w", t.Dir, err)
	}
	if err := t.crashedLogTemps(now, retain, &res); err != nil {
		return res, fmt.Errorf("delta: vacuum %s: %w", t.Dir, err)
	}
	slices.Sort(res.Files)
	if opts.DryRun {
		return res, nil
	}
	for i, rel := range res.Files {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, fmt.Errorf("delta: vacuum %s: %w", t.Dir, err)
		}
		if i == len(res.Files)/2 {
			fault.Point("vacuum.mid-delete")
		}
	}
	// Remove the partition folders left empty, deepest first.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range dirs {
		if entries, err := os.ReadDir(d); err == nil && len(entries) == 0 {
			_ = os.Remove(d)
		}
	}
	return res, nil
}

// minLogTempAge is the least age of a temporary file in _delta_log that Vacuum deletes, however
// short the retention: a commit or checkpoint is written to such a file and linked or renamed to
// its name within moments, so one this old was left by a writer that died.
const minLogTempAge = time.Hour

// crashedLogTemps adds to res the temporary files in _delta_log (".<uuid>.json.tmp" of a commit,
// ".<uuid>.checkpoint.parquet.tmp", ".<uuid>.last_checkpoint.tmp") older than retain and
// minLogTempAge at now: a process killed between writing one and putting it in place leaves it
// behind, and neither a commit nor the metadata cleanup (which deletes only expired commits and
// checkpoints) would ever remove it.
func (t *Table) crashedLogTemps(now time.Time, retain time.Duration, res *VacuumResult) error {
	entries, err := os.ReadDir(t.logDir())
	if err != nil {
		return err
	}
	cutoff := now.Add(-max(retain, minLogTempAge))
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tmp") {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !info.ModTime().Before(cutoff) {
			continue
		}
		res.Files = append(res.Files, LogDir+"/"+name)
		res.Bytes += info.Size()
	}
	return nil
}
