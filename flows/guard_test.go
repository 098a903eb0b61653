package flows

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGuardRails: changing keys, sequence_by or ignore_null_updates of an existing target is
// refused with an error that asks for a full refresh of that dataset (its CDC state was built for
// the old settings); a new stored_as_scd_type changes the schema, which Setup refuses the same way.
func TestGuardRails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ change, want string }{
		{"keys: [id, name]", "keys of items changed from [id] to [id, name]"},
		{"ignore_null_updates: true", "ignore_null_updates of items changed from false to true"},
	} {
		dir := t.TempDir()
		text := fmt.Sprintf(scd1Spec, "172800")
		p := loadPipeline(t, dir, text)
		now := time.Now()
		if _, err := apply(t, p, now, ch("I", 1, "a", 1)); err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(text, "keys: [id]", "keys: [id]\n      "+c.change, 1)
		if strings.HasPrefix(c.change, "keys") {
			changed = strings.Replace(text, "keys: [id]", c.change, 1)
		}
		p2 := loadPipeline(t, dir, changed)
		_, err := apply(t, p2, now, ch("U", 1, "b", 2))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--full-refresh items") {
			t.Errorf("%s: error = %v, want %q and a full refresh hint", c.change, err, c.want)
		}
	}
}
