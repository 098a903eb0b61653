package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ConfigEnableDeletionVectors is the table property that enables deletion vectors: when it is
// "true" in the metaData a transaction commits, the table's protocol becomes reader version 3 /
// writer version 7 with the table feature deletionVectors (Delta PROTOCOL.md, "Deletion
// Vectors"); see DeletionVectorProtocol.
const ConfigEnableDeletionVectors = "delta.enableDeletionVectors"

// FeatureDeletionVectors is the name of the deletion vectors table feature, a reader and writer
// feature (Delta PROTOCOL.md, "Valid Feature Names in Table Features").
const FeatureDeletionVectors = "deletionVectors"

// DeletionVectors reports whether the table property delta.enableDeletionVectors is "true" (in
// any case, as Delta parses it).
func (m Metadata) DeletionVectors() bool {
	return strings.EqualFold(strings.TrimSpace(m.Configuration[ConfigEnableDeletionVectors]), "true")
}

// legacyWriterFeatures are the writer features each legacy writer version implies, each version
// including those of the versions below it (Delta PROTOCOL.md, "Writer Version Requirements",
// "Valid Feature Names in Table Features").
var legacyWriterFeatures = [][]string{
	2: {"appendOnly", "invariants"},
	3: {"checkConstraints"},
	4: {"changeDataFeed", "generatedColumns"},
	5: {"columnMapping"},
	6: {"identityColumns"},
}

// FeatureTimestampNTZ is the name of the table feature a table with a TIMESTAMP_NTZ column
// needs, a reader and writer feature (Delta PROTOCOL.md, "Timestamp without timezone
// (TimestampNtz)"): Commit adds it, with reader version 3 and writer version 7, when the
// metadata it commits has such a column (at any depth) and the protocol lacks it.
const FeatureTimestampNTZ = "timestampNtz"

// DeletionVectorProtocol returns the protocol of a table whose protocol is cur (with its table
// features readerFeatures and writerFeatures, nil below reader version 3 / writer version 7)
// once deletion vectors are enabled: FeatureProtocol with deletionVectors.
func DeletionVectorProtocol(cur Protocol, readerFeatures, writerFeatures []string) (Protocol, []string, []string) {
	return FeatureProtocol(cur, readerFeatures, writerFeatures, FeatureDeletionVectors)
}

// FeatureProtocol returns the protocol of a table whose protocol is cur (with its table features
// readerFeatures and writerFeatures, nil below reader version 3 / writer version 7) once the
// reader-and-writer features named by add (deletionVectors, timestampNtz) are added: reader
// version 3 and writer version 7; readerFeatures are the current ones (columnMapping for a
// legacy reader version 2) plus add; writerFeatures are the current ones, or for a legacy writer
// version every feature that version implies (version 4, the protocol of the tables this package
// creates: appendOnly, changeDataFeed, checkConstraints, generatedColumns, invariants), plus the
// reader features. Both lists are sorted, without duplicates. Delta PROTOCOL.md, "Table Features
// for New and Existing Tables": an upgrade must assume every feature of the old protocol is used.
func FeatureProtocol(cur Protocol, readerFeatures, writerFeatures []string, add ...string) (Protocol, []string, []string) {
	var rf, wf []string
	if cur.MinReaderVersion >= 3 {
		rf = append(rf, readerFeatures...)
	} else if cur.MinReaderVersion == 2 {
		rf = append(rf, "columnMapping")
	}
	if cur.MinWriterVersion >= 7 {
		wf = append(wf, writerFeatures...)
	} else {
		for v := 2; v <= cur.MinWriterVersion && v < len(legacyWriterFeatures); v++ {
			wf = append(wf, legacyWriterFeatures[v]...)
		}
	}
	rf = append(rf, add...)
	wf = append(wf, rf...)
	slices.Sort(rf)
	slices.Sort(wf)
	return Protocol{MinReaderVersion: 3, MinWriterVersion: 7}, slices.Compact(rf), slices.Compact(wf)
}

// hasFeature reports whether name is in features.
func hasFeature(features []string, name string) bool { return slices.Contains(features, name) }

// plannedProtocol returns the protocol action the transaction writes (nil for none) and its
// feature lists: the one SetProtocol set; else DefaultProtocol for a new table; upgraded by
// FeatureProtocol when the metadata the transaction commits needs a reader-and-writer feature
// the protocol lacks: deletionVectors when it enables deletion vectors, timestampNtz when its
// schema has a TIMESTAMP_NTZ column.
func (tx *Transaction) plannedProtocol() (*Protocol, []string, []string) {
	proto, rf, wf := tx.protocol, tx.readerFeat, tx.writerFeat
	if proto == nil && tx.read == nil {
		p := DefaultProtocol
		proto = &p
	}
	if tx.metadata == nil {
		return proto, rf, wf
	}
	var need []string
	if tx.metadata.DeletionVectors() {
		need = append(need, FeatureDeletionVectors)
	}
	if tx.metadata.Schema.HasNTZ() {
		need = append(need, FeatureTimestampNTZ)
	}
	cur, crf, cwf := proto, rf, wf
	if cur == nil {
		cur, crf, cwf = &tx.read.Protocol, tx.read.ReaderFeatures, tx.read.WriterFeatures
	}
	var missing []string
	for _, f := range need {
		if cur.MinReaderVersion < 3 || cur.MinWriterVersion < 7 || !hasFeature(crf, f) || !hasFeature(cwf, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return proto, rf, wf
	}
	p, nrf, nwf := FeatureProtocol(*cur, crf, cwf, missing...)
	return &p, nrf, nwf
}

// wideBoundsStats returns the stats JSON of an add action with "tightBounds": false, the flag
// that says the min/max and null counts may cover rows a deletion vector deletes (Delta
// PROTOCOL.md, "Per-file Statistics"). The other keys keep their order; an existing tightBounds
// is replaced. Stats without numRecords are an error: a file with a deletion vector must carry
// the physical row count.
func wideBoundsStats(stats string) (string, error) {
	d := json.NewDecoder(bytes.NewReader([]byte(stats)))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("stats %q are not a JSON object", stats)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	hasNum := false
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("stats %q: %w", stats, err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := d.Decode(&val); err != nil {
			return "", fmt.Errorf("stats %q: %w", stats, err)
		}
		if key == "tightBounds" {
			continue
		}
		if key == "numRecords" && string(val) != "null" {
			hasNum = true
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(key)
		b.Write(kj)
		b.WriteByte(':')
		b.Write(val)
	}
	if !hasNum {
		return "", errors.New("the stats have no numRecords, which a file with a deletion vector must carry (Delta PROTOCOL.md, Writer Requirement for Deletion Vectors)")
	}
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	b.WriteString(`"tightBounds":false}`)
	return b.String(), nil
}
