package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"tributary/schema"
)

// Protocol is the `protocol` action: the reader and writer versions a client needs
// (Delta PROTOCOL.md, "Protocol Evolution"). The feature lists of reader version 3 / writer
// version 7 tables ("Table Features") are read into Snapshot.ReaderFeatures and
// Snapshot.WriterFeatures, and written with Transaction.SetProtocolFeatures or when a table
// enables deletion vectors or gets a TIMESTAMP_NTZ column (FeatureProtocol).
type Protocol struct {
	MinReaderVersion int
	MinWriterVersion int
}

// wireProtocol is the JSON form of the protocol action.
type wireProtocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// DefaultProtocol is the protocol of the tables that this package creates: reader version 1
// and writer version 4, the lowest writer version whose writers respect the Change Data Feed
// (Delta PROTOCOL.md, "Writer Version Requirements").
var DefaultProtocol = Protocol{MinReaderVersion: 1, MinWriterVersion: 4}

// Metadata is the `metaData` action (Delta PROTOCOL.md, "Change Metadata"). Schema is parsed
// from the action's schemaString with schema.ParseSparkJSON and written back with
// Schema.SparkJSON; CreatedTime is in milliseconds since the Unix epoch. The format is always
// {"provider":"parquet","options":{}}.
type Metadata struct {
	ID               string
	Name             string
	Description      string
	Schema           schema.Schema
	PartitionColumns []string
	Configuration    map[string]string
	CreatedTime      int64

	// physical is Schema by physical names (schema.ParsePhysicalSparkJSON), set when the table
	// read uses column mapping by name (mapped).
	physical schema.Schema
	mapped   bool
}

// ConfigColumnMappingMode is the table property that says how data files name the columns
// (Delta PROTOCOL.md, "Column Mapping"): "none" (or unset) by their names, "name" by the
// physical names of the schema's field metadata, "id" by the field ids.
const ConfigColumnMappingMode = "delta.columnMapping.mode"

// ColumnMappingMode returns the table's delta.columnMapping.mode in lower case, "none" when it is
// unset.
func (m Metadata) ColumnMappingMode() string {
	mode := strings.ToLower(strings.TrimSpace(m.Configuration[ConfigColumnMappingMode]))
	if mode == "" {
		return "none"
	}
	return mode
}

// fileSchema returns the schema that names the columns as the table's data files, partition
// values and statistics name them: Schema, or Schema by physical names under column mapping by
// name (Delta PROTOCOL.md, "Column Mapping").
func (m Metadata) fileSchema() schema.Schema {
	if m.mapped {
		return m.physical
	}
	return m.Schema
}

// ConfigEnableChangeDataFeed is the table property that makes writers produce change data
// files (Delta PROTOCOL.md, "Writer Requirements for AddCDCFile").
const ConfigEnableChangeDataFeed = "delta.enableChangeDataFeed"

// ConfigAppendOnly is the table property that forbids removing data
// (Delta PROTOCOL.md, "Append-only Tables").
const ConfigAppendOnly = "delta.appendOnly"

// ChangeDataFeed reports whether the table property delta.enableChangeDataFeed is "true" (in any
// case, as Delta parses it).
func (m Metadata) ChangeDataFeed() bool {
	return strings.EqualFold(strings.TrimSpace(m.Configuration[ConfigEnableChangeDataFeed]), "true")
}

// Add is the `add` action: a data file that becomes part of the table (Delta PROTOCOL.md,
// "Add File and Remove File"). Path is relative to the table folder and URL-encoded (RFC 2396);
// PartitionValues maps each partition column to its serialized value ("" is NULL, Delta
// PROTOCOL.md "Partition Value Serialization"); Size is in bytes; ModificationTime in
// milliseconds since the Unix epoch; Stats is the JSON text of "Per-file Statistics" (see
// ParseStats; with a deletion vector, stats.numRecords counts the rows of the data file, deleted
// ones included). Tags are kept as read. DeletionVector, when set, names the rows of the data file
// that are logically deleted (Delta PROTOCOL.md, "Deletion Vectors"); the logical file is the pair
// (Path, DeletionVector.UniqueID()).
type Add struct {
	Path             string            `json:"path"`
	PartitionValues  map[string]string `json:"partitionValues"`
	Size             int64             `json:"size"`
	ModificationTime int64             `json:"modificationTime"`
	DataChange       bool              `json:"dataChange"`
	Stats            string            `json:"stats,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	DeletionVector   *DeletionVector   `json:"deletionVector,omitempty"`
}

// Remove is the `remove` action: a data file that stops being part of the table, kept as a
// tombstone until vacuumed (Delta PROTOCOL.md, "Add File and Remove File"). DeletionTimestamp is
// in milliseconds since the Unix epoch; when ExtendedFileMetadata is true, PartitionValues and
// Size are those of the removed file. Stats, when set, is copied from the file's add action;
// DeletionVector is that of the removed logical file (Delta PROTOCOL.md, "Action Reconciliation").
type Remove struct {
	Path                 string            `json:"path"`
	DeletionTimestamp    int64             `json:"deletionTimestamp"`
	DataChange           bool              `json:"dataChange"`
	ExtendedFileMetadata bool              `json:"extendedFileMetadata"`
	PartitionValues      map[string]string `json:"partitionValues"`
	Size                 int64             `json:"size"`
	Stats                string            `json:"stats,omitempty"`
	Tags                 map[string]string `json:"tags,omitempty"`
	DeletionVector       *DeletionVector   `json:"deletionVector,omitempty"`
}

// CDC is the `cdc` action: a change data file of one version (Delta PROTOCOL.md, "Add CDC
// File"). Path is relative and URL-encoded like Add.Path, usually under _change_data/; Size is in
// bytes; DataChange is always false.
type CDC struct {
	Path            string            `json:"path"`
	PartitionValues map[string]string `json:"partitionValues"`
	Size            int64             `json:"size"`
	DataChange      bool              `json:"dataChange"`
	Tags            map[string]string `json:"tags,omitempty"`
}

// Txn is the `txn` action: the latest application-specific version of AppID, committed
// atomically with the data (Delta PROTOCOL.md, "Transaction Identifiers"). LastUpdated is in
// milliseconds since the Unix epoch (0: absent).
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated int64  `json:"lastUpdated,omitempty"`
}

// CommitInfo is the `commitInfo` action (Delta PROTOCOL.md, "Commit Provenance Information"),
// written first in every commit of this package. Timestamp is in milliseconds since the Unix
// epoch. OperationParameters follow Spark's convention: each value is written as a JSON string
// (a non-string value is written as its JSON text, as Spark writes "partitionBy":"[]"), so they
// read back as strings. OperationMetrics values are strings, as Spark writes them. Extra holds
// every other key; it is written into commitInfo (a key of the fields above is ignored) and
// read back with JSON numbers as json.Number.
type CommitInfo struct {
	Timestamp           int64
	Operation           string
	OperationParameters map[string]any
	ReadVersion         *int64
	IsBlindAppend       *bool
	OperationMetrics    map[string]string
	EngineInfo          string
	Extra               map[string]any
}

// EngineInfo is the engineInfo of every commit this package writes.
const EngineInfo = "tributary"

var commitInfoKeys = map[string]bool{
	"timestamp": true, "operation": true, "operationParameters": true, "readVersion": true,
	"isBlindAppend": true, "operationMetrics": true, "engineInfo": true,
}

// MarshalJSON writes the commitInfo object: the known keys first in a fixed order, then the
// Extra keys sorted by name.
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"timestamp":`)
	b.WriteString(strconv.FormatInt(c.Timestamp, 10))
	if err := writeKey(&b, "operation", c.Operation); err != nil {
		return nil, err
	}
	params := make(map[string]string, len(c.OperationParameters))
	for k, v := range c.OperationParameters {
		if s, ok := v.(string); ok {
			params[k] = s
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("operationParameters[%q]: %w", k, err)
		}
		params[k] = string(j)
	}
	if err := writeKey(&b, "operationParameters", params); err != nil {
		return nil, err
	}
	if c.ReadVersion != nil {
		if err := writeKey(&b, "readVersion", *c.ReadVersion); err != nil {
			return nil, err
		}
	}
	if c.IsBlindAppend != nil {
		if err := writeKey(&b, "isBlindAppend", *c.IsBlindAppend); err != nil {
			return nil, err
		}
	}
	metrics := c.OperationMetrics
	if metrics == nil {
		metrics = map[string]string{}
	}
	if err := writeKey(&b, "operationMetrics", metrics); err != nil {
		return nil, err
	}
	if c.EngineInfo != "" {
		if err := writeKey(&b, "engineInfo", c.EngineInfo); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		if !commitInfoKeys[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := writeKey(&b, k, c.Extra[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeKey(b *bytes.Buffer, k string, v any) error {
	kj, _ := json.Marshal(k)
	vj, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("commitInfo %s: %w", k, err)
	}
	b.WriteByte(',')
	b.Write(kj)
	b.WriteByte(':')
	b.Write(vj)
	return nil
}

// UnmarshalJSON reads a commitInfo object written by any engine: known keys into their
// fields, every other key into Extra (numbers as json.Number). Operation parameters and metrics
// that are not strings are kept as decoded (metrics as their JSON text).
func (c *CommitInfo) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = CommitInfo{}
	for k, v := range raw {
		var err error
		switch k {
		case "timestamp":
			err = decodeNumber(v, &c.Timestamp)
		case "operation":
			err = json.Unmarshal(v, &c.Operation)
		case "operationParameters":
			err = decodeAny(v, &c.OperationParameters)
		case "readVersion":
			if string(v) != "null" {
				var n int64
				err = decodeNumber(v, &n)
				c.ReadVersion = &n
			}
		case "isBlindAppend":
			if string(v) != "null" {
				var x bool
				err = json.Unmarshal(v, &x)
				c.IsBlindAppend = &x
			}
		case "operationMetrics":
			var m map[string]json.RawMessage
			if err = json.Unmarshal(v, &m); err == nil && m != nil {
				c.OperationMetrics = make(map[string]string, len(m))
				for mk, mv := range m {
					var s string
					if json.Unmarshal(mv, &s) != nil {
						s = string(mv)
					}
					c.OperationMetrics[mk] = s
				}
			}
		case "engineInfo":
			err = json.Unmarshal(v, &c.EngineInfo)
		default:
			var x any
			if err = decodeAny(v, &x); err == nil {
				if c.Extra == nil {
					c.Extra = map[string]any{}
				}
				c.Extra[k] = x
			}
		}
		if err != nil {
			return fmt.Errorf("commitInfo %s: %w", k, err)
		}
	}
	return nil
}

// commitTimestamp is the time of the commit in ms: inCommitTimestamp when present
// (Delta PROTOCOL.md, "In-Commit Timestamps"), else timestamp.
func (c CommitInfo) commitTimestamp() int64 {
	if n, ok := c.Extra["inCommitTimestamp"].(json.Number); ok {
		if v, err := n.Int64(); err == nil {
			return v
		}
	}
	return c.Timestamp
}

func decodeAny(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// decodeNumber reads an integer that some writers put in JSON as a float ("1.6e12").
func decodeNumber(data []byte, dst *int64) error {
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	if v, err := n.Int64(); err == nil {
		*dst = v
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return err
	}
	*dst = int64(f)
	return nil
}

// wireMetadata is the JSON form of the metaData action.
type wireMetadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           wireFormat        `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

type wireFormat struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

func (m Metadata) wire() wireMetadata {
	w := wireMetadata{
		ID: m.ID, Name: m.Name, Description: m.Description,
		Format:           wireFormat{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     m.Schema.SparkJSON(),
		PartitionColumns: m.PartitionColumns,
		Configuration:    m.Configuration,
	}
	if w.PartitionColumns == nil {
		w.PartitionColumns = []string{}
	}
	if w.Configuration == nil {
		w.Configuration = map[string]string{}
	}
	if m.CreatedTime != 0 {
		ct := m.CreatedTime
		w.CreatedTime = &ct
	}
	return w
}

func (w wireMetadata) metadata() (Metadata, error) {
	if w.Format.Provider != "" && w.Format.Provider != "parquet" {
		return Metadata{}, fmt.Errorf("table format %q is not supported (only parquet)", w.Format.Provider)
	}
	s, err := schema.ParseSparkJSON(w.SchemaString)
	if err != nil {
		return Metadata{}, err
	}
	m := Metadata{
		ID: w.ID, Name: w.Name, Description: w.Description, Schema: s,
		PartitionColumns: w.PartitionColumns, Configuration: w.Configuration,
	}
	if w.CreatedTime != nil {
		m.CreatedTime = *w.CreatedTime
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	if m.ColumnMappingMode() == "name" {
		if m.physical, err = schema.ParsePhysicalSparkJSON(w.SchemaString); err != nil {
			return Metadata{}, err
		}
		m.mapped = true
	}
	return m, nil
}

// wireAction is one line of a commit file: exactly one field is set.
type wireAction struct {
	CommitInfo *CommitInfo   `json:"commitInfo,omitempty"`
	Protocol   *wireProtocol `json:"protocol,omitempty"`
	MetaData   *wireMetadata `json:"metaData,omitempty"`
	Txn        *Txn          `json:"txn,omitempty"`
	Add        *Add          `json:"add,omitempty"`
	Remove     *Remove       `json:"remove,omitempty"`
	CDC        *CDC          `json:"cdc,omitempty"`
}

func emptyIfNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// encodeCommit renders a commit as newline-delimited JSON actions in the order commitInfo,
// protocol, metaData, txn, remove, add, cdc (Delta PROTOCOL.md, "Delta Log Entries"). The
// protocol identifies a file by its path and deletion vector, so that the order does not matter
// to a reader that follows it (Spark writes a DELETE's add with the new deletion vector before
// the remove of the file without it). Removes come first here for readers that key files by path
// alone and apply actions in order: the add that comes last leaves the file in the table.
func encodeCommit(c *Commit) ([]byte, error) {
	var b bytes.Buffer
	line := func(a wireAction) error {
		j, err := json.Marshal(a)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
		return nil
	}
	info := c.Info
	if err := line(wireAction{CommitInfo: &info}); err != nil {
		return nil, err
	}
	if c.Protocol != nil {
		p := wireProtocol{MinReaderVersion: c.Protocol.MinReaderVersion, MinWriterVersion: c.Protocol.MinWriterVersion,
			ReaderFeatures: c.readerFeatures, WriterFeatures: c.writerFeatures}
		if err := line(wireAction{Protocol: &p}); err != nil {
			return nil, err
		}
	}
	if c.Metadata != nil {
		w := c.Metadata.wire()
		if err := line(wireAction{MetaData: &w}); err != nil {
			return nil, err
		}
	}
	for i := range c.Txns {
		if err := line(wireAction{Txn: &c.Txns[i]}); err != nil {
			return nil, err
		}
	}
	for _, r := range c.Removes {
		r.PartitionValues = emptyIfNil(r.PartitionValues)
		if err := line(wireAction{Remove: &r}); err != nil {
			return nil, err
		}
	}
	for _, a := range c.Adds {
		a.PartitionValues = emptyIfNil(a.PartitionValues)
		if err := line(wireAction{Add: &a}); err != nil {
			return nil, err
		}
	}
	for _, d := range c.CDCs {
		d.PartitionValues = emptyIfNil(d.PartitionValues)
		if err := line(wireAction{CDC: &d}); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// decodeCommit parses the newline-delimited JSON actions of commit version v. Unknown actions
// (domainMetadata, checkpoint-only actions) are skipped, as Delta PROTOCOL.md "Protocol
// Evolution" asks of readers.
func decodeCommit(v int64, data []byte) (*Commit, error) {
	c := &Commit{Version: v}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		i := bytes.IndexByte(data, '\n')
		var ln []byte
		if i < 0 {
			ln, data = data, nil
		} else {
			ln, data = data[:i], data[i+1:]
		}
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 {
			continue
		}
		var a wireAction
		if err := json.Unmarshal(ln, &a); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		switch {
		case a.CommitInfo != nil:
			c.Info = *a.CommitInfo
		case a.Protocol != nil:
			c.Protocol = &Protocol{MinReaderVersion: a.Protocol.MinReaderVersion, MinWriterVersion: a.Protocol.MinWriterVersion}
			c.readerFeatures, c.writerFeatures = a.Protocol.ReaderFeatures, a.Protocol.WriterFeatures
		case a.MetaData != nil:
			m, err := a.MetaData.metadata()
			if err != nil {
				return nil, fmt.Errorf("line %d: metaData: %w", lineNo, err)
			}
			c.Metadata = &m
		case a.Txn != nil:
			c.Txns = append(c.Txns, *a.Txn)
		case a.Add != nil:
			c.Adds = append(c.Adds, *a.Add)
		case a.Remove != nil:
			c.Removes = append(c.Removes, *a.Remove)
		case a.CDC != nil:
			c.CDCs = append(c.CDCs, *a.CDC)
		}
	}
	return c, nil
}
