package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// decoder turns yaml.Nodes into values, collecting every problem with its position.
type decoder struct {
	file  string   // the file name as given, used in positions
	dir   string   // absolute folder of the spec, against which relative paths resolve
	lines []string // the source split into lines, to place positions inside scalars
	errs  Errors
	// broken holds the scalars whose ${} substitution failed: their problem is reported once,
	// and reading them fails quietly so that no second error follows from a half-made value.
	broken map[*yaml.Node]bool
}

func newDecoder(file, dir string, data []byte) *decoder {
	return &decoder{file: file, dir: dir, lines: strings.Split(string(data), "\n"), broken: map[*yaml.Node]bool{}}
}

// pos returns the position of n.
func (d *decoder) pos(n *yaml.Node) Pos {
	return Pos{File: d.file, Line: n.Line, Column: n.Column}
}

// posIn returns the position of the off-th character (rune) of the scalar n's value. It is
// exact when the scalar sits on one line and its text in the file is the value verbatim (plain,
// or quoted without escapes); otherwise it is the scalar's own position.
func (d *decoder) posIn(n *yaml.Node, off int) Pos {
	p := d.pos(n)
	if n.Kind != yaml.ScalarNode || strings.Contains(n.Value, "\n") || n.Line < 1 || n.Line > len(d.lines) {
		return p
	}
	line := []rune(strings.TrimSuffix(d.lines[n.Line-1], "\r"))
	if n.Column < 1 || n.Column > len(line) {
		return p
	}
	raw := string(line[n.Column-1:])
	switch n.Style &^ yaml.TaggedStyle {
	case 0:
		if strings.HasPrefix(raw, n.Value) {
			p.Column += off
		}
	case yaml.DoubleQuotedStyle:
		if strings.HasPrefix(raw, `"`+n.Value+`"`) {
			p.Column += 1 + off
		}
	case yaml.SingleQuotedStyle:
		if strings.HasPrefix(raw, `'`+n.Value+`'`) {
			p.Column += 1 + off
		}
	}
	return p
}

// posInBytes is posIn with a byte offset into n.Value.
func (d *decoder) posInBytes(n *yaml.Node, off int) Pos {
	off = min(max(off, 0), len(n.Value))
	return d.posIn(n, utf8.RuneCountInString(n.Value[:off]))
}

// add records a problem at p.
func (d *decoder) add(p Pos, path, hint, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: p, Path: path, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// addAt records a problem at node n.
func (d *decoder) addAt(n *yaml.Node, path, hint, format string, args ...any) {
	d.add(d.pos(n), path, hint, format, args...)
}

// child returns the key path of key under path.
func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// item returns the key path of the i-th element of the list at path.
func item(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// isMergeKey says whether k is YAML's merge key `<<` (its tag !!merge, or the plain scalar <<).
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0))
}

// expandMerges applies YAML's merge keys (https://yaml.org/type/merge.html) below n, in place:
// in a mapping, `<<: *anchor` (or `<<: [*a, *b]`) adds the keys of the named mapping(s) that the
// mapping does not give itself, an earlier one of a list winning over a later, and the `<<` pair
// goes. A `<<` whose value is not a mapping or a list of them stays, for the decoder to refuse
// as a key it does not know. The added pairs are the named mapping's own nodes.
func expandMerges(n *yaml.Node, done map[*yaml.Node]bool) {
	if n == nil || done[n] {
		return
	}
	done[n] = true
	for _, c := range n.Content {
		expandMerges(c, done)
	}
	if n.Kind == yaml.AliasNode {
		expandMerges(n.Alias, done)
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	var out, merged []*yaml.Node
	own := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			src := resolve(v)
			var maps []*yaml.Node
			switch src.Kind {
			case yaml.MappingNode:
				maps = []*yaml.Node{src}
			case yaml.SequenceNode:
				for _, e := range src.Content {
					if m := resolve(e); m.Kind == yaml.MappingNode {
						maps = append(maps, m)
					} else {
						maps = nil
						break
					}
				}
			}
			if maps != nil {
				for _, m := range maps {
					expandMerges(m, done)
					merged = append(merged, m.Content...)
				}
				continue
			}
		}
		own[resolve(k).Value] = true
		out = append(out, k, v)
	}
	if len(out) == len(n.Content) {
		return
	}
	for i := 0; i+1 < len(merged); i += 2 {
		if k := resolve(merged[i]); !own[k.Value] {
			own[k.Value] = true
			out = append(out, merged[i], merged[i+1])
		}
	}
	n.Content = out
}

// dropExtensions removes from the top-level mapping doc the keys that start with "x-": extension
// keys, as in Compose files, which a spec may use to hold YAML anchors that its datasets merge
// (`x-json-source: &src {...}`, then `source: {<<: *src, path: ...}`). They mean nothing else.
func dropExtensions(doc *yaml.Node) {
	if doc == nil || doc.Kind != yaml.MappingNode {
		return
	}
	out := doc.Content[:0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k := resolve(doc.Content[i]); k.Kind == yaml.ScalarNode && strings.HasPrefix(k.Value, "x-") {
			continue
		}
		out = append(out, doc.Content[i], doc.Content[i+1])
	}
	doc.Content = out
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// kindName says what a node is, for "expected X, found Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// entry is one key of a mapping, with its value and key path.
type entry struct {
	name     string
	key, val *yaml.Node
	path     string
}

// keySet says which keys a mapping may have: known ones are decoded by the caller; later ones
// are part of spec.md but not of this release, and are reported as not supported yet with the
// hint given.
type keySet struct {
	known []string
	later map[string]string
}

func (k keySet) all() []string {
	out := append([]string(nil), k.known...)
	return append(out, sortedKeys(k.later)...)
}

// mapping checks that n is a mapping and returns its entries in file order: known keys and, so
// that callers can count them, later keys (reported here as not supported yet). Unknown keys
// (with a did-you-mean hint), repeated keys and non-string keys are reported and left out.
// A null n is an empty mapping; ok is false when n is not a mapping at all.
func (d *decoder) mapping(n *yaml.Node, path string, keys keySet) (entries []entry, ok bool) {
	n = resolve(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.addAt(n, path, "", "expected a mapping of keys, found %s", kindName(n))
		return nil, false
	}
	known := map[string]bool{}
	for _, k := range keys.known {
		known[k] = true
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.addAt(k, path, "", "expected a key name, found %s", kindName(k))
			continue
		}
		p := child(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.addAt(k, p, "remove one of them", "key %s is given twice (first at %s)", k.Value, d.pos(first).short())
			continue
		}
		seen[k.Value] = k
		if hint, later := keys.later[k.Value]; later {
			d.addAt(k, p, hint, "%s is not supported yet", k.Value)
			entries = append(entries, entry{name: k.Value, key: k, val: v, path: p})
			continue
		}
		if !known[k.Value] {
			hint := didYouMean(k.Value, keys.all(), "valid keys")
			if key, ok := dltNames[strings.ToLower(k.Value)]; ok && known[key] {
				hint = "write `" + key + ":`, as " + k.Value + " is called here"
			}
			d.addAt(k, p, hint, "unknown key %s", k.Value)
			continue
		}
		entries = append(entries, entry{name: k.Value, key: k, val: v, path: p})
	}
	return entries, true
}

// dltNames maps the names newer Delta Live Tables (Lakeflow) releases give the CDC flows, in
// their Python and SQL forms, to the keys that name them here.
var dltNames = map[string]string{
	"auto_cdc":                           "apply_changes",
	"create_auto_cdc_flow":               "apply_changes",
	"auto_cdc_from_snapshot":             "apply_changes_from_snapshot",
	"create_auto_cdc_from_snapshot_flow": "apply_changes_from_snapshot",
}

// str reads a string scalar. Numbers and booleans are taken as their text.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if d.broken[n] {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.addAt(n, path, "", "expected a string, found %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// nonEmpty reads a string scalar that must not be blank.
func (d *decoder) nonEmpty(n *yaml.Node, path string) (string, bool) {
	s, ok := d.str(n, path)
	if ok && strings.TrimSpace(s) == "" {
		d.addAt(resolve(n), path, "", "must not be empty")
		return "", false
	}
	return s, ok
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ident reads a name that must match [A-Za-z_][A-Za-z0-9_]*.
func (d *decoder) ident(n *yaml.Node, path, what string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if !identifier.MatchString(s) {
		d.addAt(resolve(n), path, "use letters, digits and _, not starting with a digit",
			"%s %q is not a valid name", what, s)
		return s, false
	}
	return s, true
}

// boolean reads true or false (in any case, quoted or not).
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	n = resolve(n)
	if d.broken[n] {
		return false, false
	}
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	d.addAt(n, path, "", "expected true or false, found %s", kindName(n))
	return false, false
}

// integer reads a whole number (quoted or not).
func (d *decoder) integer(n *yaml.Node, path string) (int, bool) {
	n = resolve(n)
	if d.broken[n] {
		return 0, false
	}
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		if v, err := strconv.Atoi(strings.TrimSpace(n.Value)); err == nil {
			return v, true
		}
	}
	d.addAt(n, path, "", "expected a whole number, found %s", kindName(n))
	return 0, false
}

// oneOf reads a string that must be one of values (compared without case) and returns it in
// lower case.
func (d *decoder) oneOf(n *yaml.Node, path string, values ...string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	for _, v := range values {
		if strings.EqualFold(s, v) {
			return v, true
		}
	}
	hint := didYouMean(s, values, "valid values")
	if !strings.HasPrefix(hint, "did") {
		hint = ""
		// A value of several words that starts with a valid one: SQL's `ON VIOLATION DROP ROW`
		// and `FAIL UPDATE` of Delta Live Tables are `drop` and `fail` here.
		if f := strings.Fields(s); len(f) > 1 {
			for _, v := range values {
				if strings.EqualFold(f[0], v) {
					hint = "did you mean `" + v + "`?"
				}
			}
		}
	}
	d.addAt(resolve(n), path, hint, "%q is not one of %s", s, strings.Join(values, ", "))
	return "", false
}

// isString reports whether n is a string scalar: YAML's !!str, which a quoted value always is
// (5 is a number, true a boolean, "5" and id strings).
func isString(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str"
}

// describe says what a value is, for "got ..." messages: "the number 5", "the boolean true",
// "nothing", "a list", or a string quoted.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!timestamp":
			return "the timestamp " + n.Value
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return fmt.Sprintf("%q tagged %s", n.Value, n.Tag)
	}
	return "something else"
}

// strMap reads a mapping of names to string values (numbers and booleans taken as their text).
// keyNodes gives the node of each key, for positions.
func (d *decoder) strMap(n *yaml.Node, path string) (m map[string]string, keyNodes map[string]*yaml.Node, ok bool) {
	n = resolve(n)
	m, keyNodes = map[string]string{}, map[string]*yaml.Node{}
	if isNull(n) {
		return m, keyNodes, true
	}
	if n.Kind != yaml.MappingNode {
		d.addAt(n, path, "", "expected a mapping of names to values, found %s", kindName(n))
		return m, keyNodes, false
	}
	ok = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			d.addAt(k, path, "", "expected a name, found %s", kindName(k))
			ok = false
			continue
		}
		p := child(path, k.Value)
		if first, dup := keyNodes[k.Value]; dup {
			d.addAt(k, p, "remove one of them", "key %s is given twice (first at %s)", k.Value, d.pos(first).short())
			ok = false
			continue
		}
		keyNodes[k.Value] = k
		v, good := d.str(n.Content[i+1], p)
		if !good {
			ok = false
			continue
		}
		m[k.Value] = v
	}
	return m, keyNodes, ok
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
