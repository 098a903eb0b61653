package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"tributary/internal/suggest"
)

// lookup resolves a ${name}: its value and whether it is set.
type lookup func(name string) (string, bool)

// varUse is one ${name} in a scalar: the name and the byte offset of its "${".
type varUse struct {
	name string
	off  int
}

// expand replaces every ${name} in s with look(name) and every $${ with a literal ${.
// unset lists the names look does not know; bad lists malformed uses (no closing brace, or an
// empty name), with the name field holding the problem.
func expand(s string, look lookup) (out string, unset, bad []varUse) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				bad = append(bad, varUse{"${ has no closing }", i})
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			name := s[i+2 : i+2+end]
			if strings.TrimSpace(name) == "" {
				bad = append(bad, varUse{"${} names nothing", i})
			} else if v, ok := look(name); ok {
				b.WriteString(v)
			} else {
				unset = append(unset, varUse{name, i})
			}
			i += end + 3
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), unset, bad
}

// substitution collects the unset names of one pass, to report each once with every place it
// is used.
type substitution struct {
	d    *decoder
	look lookup
	// brokenVars are configuration keys whose own value could not be substituted; a scalar
	// that uses one is broken too, without a second report.
	brokenVars map[string]bool
	hint       func(name string) string
	names      []string // in order of first use
	uses       map[string][]Error
}

func newSubstitution(d *decoder, look lookup, hint func(string) string) *substitution {
	return &substitution{d: d, look: look, hint: hint, uses: map[string][]Error{}}
}

// walk substitutes every string scalar under n (mapping values and list items, never mapping
// keys), except the subtree skip.
func (s *substitution) walk(n *yaml.Node, path string, skip *yaml.Node) {
	if n == nil || n == skip {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			s.walk(c, path, skip)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			s.walk(n.Content[i+1], child(path, n.Content[i].Value), skip)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			s.walk(c, item(path, i), skip)
		}
	case yaml.ScalarNode:
		s.scalar(n, path)
	}
}

// scalar substitutes one scalar in place; positions are taken before the value changes.
func (s *substitution) scalar(n *yaml.Node, path string) {
	usesBroken := false
	look := func(name string) (string, bool) {
		usesBroken = usesBroken || s.brokenVars[name]
		return s.look(name)
	}
	out, unset, bad := expand(n.Value, look)
	if len(unset) > 0 || len(bad) > 0 || usesBroken {
		s.d.broken[n] = true
	}
	for _, u := range bad {
		s.d.add(s.d.posInBytes(n, u.off), path, "write $${ for a literal ${", "%s", u.name)
	}
	for _, u := range unset {
		if _, seen := s.uses[u.name]; !seen {
			s.names = append(s.names, u.name)
		}
		s.uses[u.name] = append(s.uses[u.name], Error{Pos: s.d.posInBytes(n, u.off), Path: path})
	}
	if out != n.Value {
		n.Value = out
		if n.Tag == "!!null" || n.Tag == "" {
			n.Tag = "!!str"
		}
	}
}

// report records one problem per unset name, at its first use, naming the other uses.
func (s *substitution) report() {
	for _, name := range s.names {
		uses := s.uses[name]
		msg := fmt.Sprintf("${%s} is not set", name)
		if len(uses) > 1 {
			var at []string
			for _, u := range uses[1:] {
				at = append(at, u.Pos.short())
			}
			msg += "; also used at " + strings.Join(at, ", ")
		}
		s.d.errs = append(s.d.errs, &Error{Pos: uses[0].Pos, Path: uses[0].Path, Msg: msg, Hint: s.hint(name), Unset: name})
	}
}

// configuration decodes the top-level `configuration` mapping of doc. Its values may use
// ${NAME} from the environment only; conf (the `--conf k=v` pairs) then overrides or adds keys
// (an overridden value is not substituted at all, so it cannot fail).
// It returns the effective configuration; the lookup for the rest of the spec: configuration
// (with conf), then the environment; the configuration's value node, which the general pass
// must skip; and the keys whose value could not be substituted.
func (d *decoder) configuration(doc *yaml.Node, conf map[string]string, env lookup) (vars map[string]string, look lookup, node *yaml.Node, brokenVars map[string]bool) {
	if doc.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == "configuration" {
				node = doc.Content[i+1]
				break
			}
		}
	}
	vars, brokenVars = map[string]string{}, map[string]bool{}
	if node != nil {
		sub := newSubstitution(d, env, func(name string) string {
			return fmt.Sprintf("configuration values may use the environment only: set the environment variable %s", name)
		})
		if n := resolve(node); n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if _, overridden := conf[n.Content[i].Value]; !overridden {
					sub.walk(n.Content[i+1], child("configuration", n.Content[i].Value), nil)
				}
			}
		}
		sub.report()
		vars, _, _ = d.strMap(node, "configuration")
		if n := resolve(node); n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if d.broken[resolve(n.Content[i+1])] {
					brokenVars[n.Content[i].Value] = true
				}
			}
		}
	}
	for k, v := range conf {
		vars[k] = v
		delete(brokenVars, k)
	}
	look = func(name string) (string, bool) {
		if v, ok := vars[name]; ok || brokenVars[name] {
			return v, true
		}
		return env(name)
	}
	return vars, look, node, brokenVars
}

// substituteAll replaces ${key} in every string value of doc but the configuration (skip).
// defined are the configuration's keys (with --conf's): the hint for a name that is not set
// offers the closest of them.
func (d *decoder) substituteAll(doc *yaml.Node, look lookup, skip *yaml.Node, brokenVars map[string]bool, defined []string) {
	sub := newSubstitution(d, look, func(name string) string {
		fix := fmt.Sprintf("define it under `configuration:`, pass --conf %s=VALUE, or set the environment variable %s", name, name)
		if best := suggest.Closest(name, defined); len(best) > 0 {
			return fmt.Sprintf("did you mean ${%s}, which `configuration:` defines? Otherwise %s", best[0], fix)
		}
		return fix
	})
	sub.brokenVars = brokenVars
	sub.walk(doc, "", skip)
	sub.report()
}

// unusedConf reports each `--conf` key (conf) that the spec neither defines under
// `configuration:` (node) nor uses as ${key} (used): the value changes nothing, most likely a
// misspelt key, which would otherwise leave the spec's own value (its storage, say) in force.
// inConfig holds the names that configuration values use (configNames), which take the
// environment only: their error says so.
func (d *decoder) unusedConf(file string, conf map[string]string, node *yaml.Node, used, inConfig map[string]bool) {
	known := map[string]bool{}
	if n := resolve(node); n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			known[n.Content[i].Value] = true
		}
	}
	for k := range used {
		known[k] = true
	}
	candidates := slices.Sorted(maps.Keys(known))
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		switch {
		case known[k]:
		case inConfig[k]:
			d.add(Pos{File: file}, "--conf "+k, "set the environment variable "+k+", or pass --conf for the configuration key whose value uses it",
				"the spec uses ${%s} only in `configuration:` values, which take the environment only, so --conf %s=%s would change nothing", k, k, conf[k])
		default:
			d.add(Pos{File: file}, "--conf "+k, didYouMean(k, candidates, "the keys it defines or uses"),
				"the spec neither defines %s under `configuration:` nor uses ${%s}, so --conf %s=%s would change nothing", k, k, k, conf[k])
		}
	}
}

// configNames returns the names that the values of doc's `configuration:` use as ${name}, read
// before substitution.
func configNames(doc *yaml.Node) map[string]bool {
	out := map[string]bool{}
	if doc.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "configuration" {
			continue
		}
		if n := resolve(doc.Content[i+1]); n.Kind == yaml.MappingNode {
			for j := 1; j < len(n.Content); j += 2 {
				if v := resolve(n.Content[j]); v.Kind == yaml.ScalarNode {
					_, unset, _ := expand(v.Value, func(string) (string, bool) { return "", false })
					for _, u := range unset {
						out[u.name] = true
					}
				}
			}
		}
	}
	return out
}
